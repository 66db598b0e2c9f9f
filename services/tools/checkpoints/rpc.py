"""The checkpoint RPCs of the ToolRuntime service (a mixin of its servicer)."""

from __future__ import annotations

import asyncio
import difflib
from pathlib import Path

import grpc
from ai_coding.v1 import tools_pb2

from services.kernel.errors import abort
from services.tools.checkpoints.errors import CheckpointError
from services.tools.checkpoints.hook import CheckpointHook
from services.tools.checkpoints.objects import FILE, Entry, ObjectStore
from services.tools.checkpoints.restore import Change
from services.tools.checkpoints.store import Checkpoint, CheckpointStore
from services.tools.errors import UnknownSession

LINE_COUNT_MAX_BYTES = 1024 * 1024


def info(checkpoint: Checkpoint) -> tools_pb2.CheckpointInfo:
    return tools_pb2.CheckpointInfo(
        checkpoint_id=checkpoint.checkpoint_id, session_id=checkpoint.session_id, label=checkpoint.label,
        call_id=checkpoint.call_id, created=checkpoint.created, files=checkpoint.files,
        files_read=checkpoint.read, tree=checkpoint.tree,
        skipped=[tools_pb2.SkippedPath(path=s.path, why=s.why) for s in checkpoint.skipped])


def _text(objects: ObjectStore, entry: Entry | None) -> list[str] | None:
    """A file's lines, [] when absent, None when binary or too large to count."""
    if entry is None or entry.kind != FILE:
        return []
    if entry.size > LINE_COUNT_MAX_BYTES:
        return None
    data = objects.get(entry.ref)
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace").splitlines()


def file_change(objects: ObjectStore, change: Change, before: dict[str, Entry],
                after: dict[str, Entry]) -> tools_pb2.FileChange:
    """A change with its +/- line counts (none for binary files)."""
    old, new = _text(objects, before.get(change.path)), _text(objects, after.get(change.path))
    if old is None or new is None:
        return tools_pb2.FileChange(path=change.path, kind=change.kind, binary=True)
    added = removed = 0
    for line in difflib.unified_diff(old, new, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return tools_pb2.FileChange(path=change.path, kind=change.kind, lines_added=added, lines_removed=removed)


class CheckpointRpcs:
    """Create / List / Diff / Restore / Prune over the runtime's checkpoint stores."""

    runtime_checkpoints: CheckpointHook

    def _root_of(self, session_id: str) -> Path:
        raise NotImplementedError

    def _open_sessions(self) -> set[str]:
        """Sessions registered with this service now (live even before their loop wrote their file)."""
        raise NotImplementedError

    async def _store(self, session_id: str, context: grpc.aio.ServicerContext) -> CheckpointStore:
        try:
            return self.runtime_checkpoints.manager.store(self._root_of(session_id))
        except UnknownSession as exc:
            await abort(context, grpc.StatusCode.NOT_FOUND, exc.reason, str(exc))
        except CheckpointError as exc:
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, exc.reason, str(exc))

    @staticmethod
    async def _fail(context: grpc.aio.ServicerContext, exc: CheckpointError) -> None:
        await abort(context, grpc.StatusCode.NOT_FOUND if exc.reason == "unknown_checkpoint"
                    else grpc.StatusCode.FAILED_PRECONDITION, exc.reason, str(exc))

    async def CreateCheckpoint(self, request: tools_pb2.CreateCheckpointRequest,
                               context: grpc.aio.ServicerContext) -> tools_pb2.CheckpointInfo:
        store = await self._store(request.session_id, context)
        checkpoint = await asyncio.to_thread(store.create, request.session_id, request.label or "checkpoint")
        return info(checkpoint)

    async def ListCheckpoints(self, request: tools_pb2.ListCheckpointsRequest,
                              context: grpc.aio.ServicerContext) -> tools_pb2.ListCheckpointsResponse:
        store = await self._store(request.session_id, context)
        found = await asyncio.to_thread(store.checkpoints, request.session_id)
        size = await asyncio.to_thread(store.size)
        return tools_pb2.ListCheckpointsResponse(checkpoints=[info(c) for c in found], store_bytes=size)

    async def DiffCheckpoint(self, request: tools_pb2.DiffCheckpointRequest,
                             context: grpc.aio.ServicerContext) -> tools_pb2.DiffCheckpointResponse:
        store = await self._store(request.session_id, context)

        def run() -> list[tools_pb2.FileChange]:
            found, before, after = store.diff(request.from_checkpoint_id, request.to_checkpoint_id)
            return [file_change(store.objects, c, before, after) for c in found]

        try:
            return tools_pb2.DiffCheckpointResponse(changes=await asyncio.to_thread(run))
        except CheckpointError as exc:
            await self._fail(context, exc)
            raise

    async def RestoreCheckpoint(self, request: tools_pb2.RestoreCheckpointRequest,
                                context: grpc.aio.ServicerContext) -> tools_pb2.RestoreCheckpointResponse:
        store = await self._store(request.session_id, context)
        try:
            report = await asyncio.to_thread(store.restore, request.session_id, request.checkpoint_id,
                                             request.baseline_checkpoint_id, request.overwrite_changed,
                                             request.dry_run)
        except CheckpointError as exc:
            await self._fail(context, exc)
            raise
        return tools_pb2.RestoreCheckpointResponse(
            redo_checkpoint_id=report.redo_checkpoint_id, changed_since=report.changed_since, kept=report.kept,
            not_restorable=report.not_restorable, written=report.written, removed=report.removed)

    async def PruneCheckpoints(self, request: tools_pb2.PruneCheckpointsRequest,
                               context: grpc.aio.ServicerContext) -> tools_pb2.PruneCheckpointsResponse:
        store = await self._store(request.session_id, context)
        if request.orphans:
            live = {*request.live_sessions, *self._open_sessions()}
            dropped, freed = await asyncio.to_thread(store.prune_orphans, live)
        else:
            dropped, freed = await asyncio.to_thread(store.prune, request.session_id, max(0, request.keep_last))
        return tools_pb2.PruneCheckpointsResponse(dropped=dropped, bytes_freed=freed)
