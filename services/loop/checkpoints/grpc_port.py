"""The checkpoint RPCs of the tools service, through the loop's tools client."""

from __future__ import annotations

from ai_coding.v1 import tools_pb2

from services.loop.adapters.tools import GrpcToolRunner
from services.loop.checkpoints.port import FileDelta, Restored

RESTORE_DEADLINE_S = 600.0


class GrpcCheckpoints:
    """``CheckpointPort`` over a GrpcToolRunner (grpc.RpcError when the service refuses or is down)."""

    def __init__(self, runner: GrpcToolRunner) -> None:
        self.runner = runner

    async def create(self, session_id: str, label: str) -> str:
        info = await self.runner.rpc(session_id, "CreateCheckpoint", tools_pb2.CreateCheckpointRequest(
            session_id=session_id, label=label), timeout=RESTORE_DEADLINE_S)
        return str(info.checkpoint_id)

    async def diff(self, session_id: str, from_id: str, to_id: str = "") -> list[FileDelta]:
        response = await self.runner.rpc(session_id, "DiffCheckpoint", tools_pb2.DiffCheckpointRequest(
            session_id=session_id, from_checkpoint_id=from_id, to_checkpoint_id=to_id), timeout=RESTORE_DEADLINE_S)
        return [FileDelta(c.path, c.kind, c.lines_added, c.lines_removed, c.binary) for c in response.changes]

    async def restore(self, session_id: str, checkpoint_id: str, baseline_id: str, overwrite_changed: bool,
                      dry_run: bool = False) -> Restored:
        r = await self.runner.rpc(session_id, "RestoreCheckpoint", tools_pb2.RestoreCheckpointRequest(
            session_id=session_id, checkpoint_id=checkpoint_id, baseline_checkpoint_id=baseline_id,
            overwrite_changed=overwrite_changed, dry_run=dry_run), timeout=RESTORE_DEADLINE_S)
        return Restored(r.redo_checkpoint_id, list(r.changed_since), list(r.kept), list(r.not_restorable),
                        r.written, r.removed)

    async def prune(self, session_id: str) -> int:
        response = await self.runner.rpc(session_id, "PruneCheckpoints", tools_pb2.PruneCheckpointsRequest(
            session_id=session_id))
        return int(response.dropped)

    async def prune_orphans(self, session_id: str, live_sessions: list[str]) -> int:
        response = await self.runner.rpc(session_id, "PruneCheckpoints", tools_pb2.PruneCheckpointsRequest(
            session_id=session_id, orphans=True, live_sessions=live_sessions), timeout=RESTORE_DEADLINE_S)
        return int(response.dropped)
