"""The gRPC servicer: wire in, MemoryEngine call in a worker thread, wire out.

SQLite calls block, so each RPC runs the engine in a thread; a known error
becomes a status with a stable reason, anything else INTERNAL with no traceback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

import grpc
from ai_coding.v1 import memory_pb2 as pb
from ai_coding.v1 import memory_pb2_grpc as pb_grpc

from services.kernel.errors import abort
from services.memory import convert
from services.memory.errors import InvalidRequest, MemoryServiceError, NoteNotFound, StoreUnavailable
from services.memory.service import MemoryEngine

log = logging.getLogger("ai_coding.memory")
T = TypeVar("T")

_CODES: dict[type[MemoryServiceError], grpc.StatusCode] = {
    NoteNotFound: grpc.StatusCode.NOT_FOUND,
    InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
    StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
}


class MemoryServicer(pb_grpc.MemoryServicer):
    """Adapts ai_coding.v1.Memory to :class:`MemoryEngine`."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

    async def _run(self, context: grpc.aio.ServicerContext, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except MemoryServiceError as exc:
            code = _CODES.get(type(exc), grpc.StatusCode.FAILED_PRECONDITION)
            await abort(context, code, exc.reason, str(exc))
        except Exception:
            log.exception("memory RPC failed")
            await abort(context, grpc.StatusCode.INTERNAL, "memory_internal", "the memory service failed; see its log")

    async def WriteNote(self, request: pb.WriteNoteRequest, context: grpc.aio.ServicerContext) -> pb.WriteNoteResponse:
        extractor = request.extractor or "memory_write"
        outcome = await self._run(
            context,
            lambda: self.engine.write_note(request.workspace, convert.candidate_from_pb(request.note), extractor),
        )
        return convert.write_response(outcome)

    async def Reconcile(self, request: pb.ReconcileRequest, context: grpc.aio.ServicerContext) -> pb.ReconcileResponse:
        extractor = request.extractor or "harvest"
        outcomes = await self._run(
            context,
            lambda: self.engine.reconcile(
                request.workspace, [convert.candidate_from_pb(c) for c in request.candidates], extractor
            ),
        )
        return convert.reconcile_response(outcomes)

    async def Recall(self, request: pb.RecallRequest, context: grpc.aio.ServicerContext) -> pb.RecallResponse:
        query = convert.recall_query(request)
        result = await self._run(context, lambda: self.engine.recall(request.workspace, query))
        return convert.recall_response(result)

    async def GetConstraints(
        self, request: pb.GetConstraintsRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetConstraintsResponse:
        block = await self._run(context, lambda: self.engine.constraints(request.workspace, request.max_chars))
        return pb.GetConstraintsResponse(block=block)

    async def ListNotes(self, request: pb.ListNotesRequest, context: grpc.aio.ServicerContext) -> pb.ListNotesResponse:
        notes = await self._run(context, lambda: self.engine.list_notes(request.workspace, request.kind, request.limit))
        return pb.ListNotesResponse(notes=[convert.note_to_pb(n) for n in notes])

    async def GetNote(self, request: pb.GetNoteRequest, context: grpc.aio.ServicerContext) -> pb.GetNoteResponse:
        note = await self._run(context, lambda: self.engine.get(request.workspace, request.id))
        return pb.GetNoteResponse(note=convert.note_to_pb(note))

    async def PinNote(self, request: pb.PinNoteRequest, context: grpc.aio.ServicerContext) -> pb.PinNoteResponse:
        note = await self._run(context, lambda: self.engine.pin(request.workspace, request.id, request.pinned))
        return pb.PinNoteResponse(note=convert.note_to_pb(note))

    async def ForgetNote(self, request: pb.ForgetNoteRequest, context: grpc.aio.ServicerContext) -> pb.ForgetNoteResponse:
        deleted = await self._run(context, lambda: self.engine.forget(request.workspace, request.id))
        return pb.ForgetNoteResponse(deleted=deleted)

    async def Consolidate(
        self, request: pb.ConsolidateRequest, context: grpc.aio.ServicerContext
    ) -> pb.ConsolidateResponse:
        report = await self._run(context, lambda: self.engine.consolidate(request.workspace))
        return convert.consolidate_response(report)

    async def ArchiveMessages(
        self, request: pb.ArchiveMessagesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ArchiveMessagesResponse:
        messages = [convert.archived_from_pb(m) for m in request.messages]
        count = await self._run(context, lambda: self.engine.archive(request.workspace, messages))
        return pb.ArchiveMessagesResponse(archived=count)

    async def SearchHistory(
        self, request: pb.SearchHistoryRequest, context: grpc.aio.ServicerContext
    ) -> pb.SearchHistoryResponse:
        found = await self._run(
            context,
            lambda: self.engine.search_history(request.workspace, request.query, request.session_id, request.k),
        )
        return pb.SearchHistoryResponse(messages=[convert.archived_to_pb(m) for m in found])
