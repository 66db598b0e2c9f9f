"""The memory service behind the loop's ``MemoryClient`` port (services/loop/core/ports.py)."""

from __future__ import annotations

import json
from typing import Any

import grpc
from ai_coding.v1 import memory_pb2, memory_pb2_grpc

from services.kernel.channels import call_metadata
from services.kernel.endpoints import Endpoint
from services.loop.adapters.on_demand import ServiceChannel
from services.loop.core.errors import AuxiliaryError
from services.loop.core.ports import ArchivedRecord, MemorySearchResult
from services.memory.tools_schema import parse_search_args, parse_write_args


class GrpcMemoryClient:
    """Recall, write and the constraints block over gRPC; failures raise AuxiliaryError."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._service = ServiceChannel(endpoint, "memory")
        self._client: memory_pb2_grpc.MemoryStub | None = None

    async def _stub(self) -> memory_pb2_grpc.MemoryStub:
        """The stub, once the service can take a call (it may be starting on demand)."""
        await self._service.started()
        if self._client is None:
            self._client = memory_pb2_grpc.MemoryStub(self._service.channel)
        return self._client

    def warm(self) -> None:
        self._service.warm()

    async def close(self) -> None:
        await self._service.close()

    async def search(self, workspace: str, args: dict[str, Any], timeout_seconds: float) -> MemorySearchResult:
        q = parse_search_args(args)  # ValueError names the bad argument
        request = memory_pb2.RecallRequest(
            workspace=workspace, query=q.query, k=q.k, kind=q.kind, evidence=q.evidence, scope=q.scope,
            scene=q.scene, since_days=q.since_days, include_near_misses=q.include_near_misses,
            timeout_seconds=timeout_seconds,
        )
        try:
            response = await (await self._stub()).Recall(request, timeout=timeout_seconds + 1.0, metadata=call_metadata())
        except grpc.RpcError as err:
            raise AuxiliaryError("memory", _reason(err)) from None
        try:
            diagnostics = json.loads(response.diagnostics_json or "{}")
        except ValueError:
            diagnostics = {}
        timed_out = bool(isinstance(diagnostics, dict) and diagnostics.get("timed_out"))
        return MemorySearchResult(response.rendered or "no matching notes", timed_out=timed_out)

    async def write(self, workspace: str, args: dict[str, Any], timeout_seconds: float) -> str:
        c = parse_write_args(args)  # ValueError names the bad argument
        note = memory_pb2.NoteCandidate(
            text=c.text, kind=c.kind, importance=c.importance, target_id=c.target_id, scene=c.scene,
            evidence=c.evidence or "model", scope=c.scope,
            action=memory_pb2.ReconcileAction.Value(f"RECONCILE_ACTION_{c.action.name}"),
        )
        try:
            response = await (await self._stub()).WriteNote(
                memory_pb2.WriteNoteRequest(workspace=workspace, note=note, extractor="memory_write"),
                timeout=timeout_seconds, metadata=call_metadata(),
            )
        except grpc.RpcError as err:
            raise AuxiliaryError("memory", _reason(err)) from None
        if response.rejected_reason:
            return f"not stored: {response.rejected_reason}"
        action = memory_pb2.ReconcileAction.Name(response.action).removeprefix("RECONCILE_ACTION_").lower()
        return f"stored ({action}) as note {response.note.id}"

    async def constraints(self, workspace: str, max_chars: int, timeout_seconds: float) -> str:
        try:
            response = await (await self._stub()).GetConstraints(
                memory_pb2.GetConstraintsRequest(workspace=workspace, max_chars=max_chars),
                timeout=timeout_seconds, metadata=call_metadata(),
            )
        except grpc.RpcError as err:
            raise AuxiliaryError("memory", _reason(err)) from None
        return str(response.block)


    async def existing_notes(self, workspace: str, limit: int, timeout_seconds: float) -> list[tuple[str, str]]:
        try:
            response = await (await self._stub()).ListNotes(memory_pb2.ListNotesRequest(workspace=workspace, limit=limit),
                                                  timeout=timeout_seconds, metadata=call_metadata())
        except grpc.RpcError as err:
            raise AuxiliaryError("memory", _reason(err)) from None
        return [(note.id, note.text) for note in response.notes]

    async def reconcile(self, workspace: str, candidates: list[dict[str, Any]], timeout_seconds: float) -> int:
        fields = set(memory_pb2.NoteCandidate.DESCRIPTOR.fields_by_name)
        notes = [memory_pb2.NoteCandidate(**{k: v for k, v in c.items() if k in fields}) for c in candidates]
        try:
            response = await (await self._stub()).Reconcile(
                memory_pb2.ReconcileRequest(workspace=workspace, candidates=notes, extractor="harvest"),
                timeout=timeout_seconds, metadata=call_metadata())
        except grpc.RpcError as err:
            raise AuxiliaryError("memory", _reason(err)) from None
        return sum(1 for o in response.outcomes if not o.rejected_reason)

    async def archive_messages(self, workspace: str, session_id: str, records: list[ArchivedRecord],
                               timeout_seconds: float) -> int:
        request = memory_pb2.ArchiveMessagesRequest(workspace=workspace, messages=[
            memory_pb2.ArchivedMessage(session_id=session_id, index=r.index, role=r.role, text=r.text)
            for r in records])
        try:
            response = await (await self._stub()).ArchiveMessages(request, timeout=timeout_seconds, metadata=call_metadata())
        except grpc.RpcError as err:
            raise AuxiliaryError("memory", _reason(err)) from None
        return int(response.archived)

    async def search_history(self, workspace: str, session_id: str, query: str, k: int,
                             timeout_seconds: float) -> list[ArchivedRecord]:
        request = memory_pb2.SearchHistoryRequest(workspace=workspace, session_id=session_id, query=query, k=k)
        try:
            response = await (await self._stub()).SearchHistory(request, timeout=timeout_seconds, metadata=call_metadata())
        except grpc.RpcError as err:
            raise AuxiliaryError("memory", _reason(err)) from None
        return [ArchivedRecord(m.index, m.role, m.text) for m in response.messages]


def _reason(err: grpc.RpcError) -> str:
    code = err.code() if hasattr(err, "code") else None
    return code.name.lower() if code is not None else "error"
