"""The checkpoint store's exceptions (infrastructure failures: gRPC statuses with a stable reason)."""

from __future__ import annotations

from services.tools.errors import ToolsError


class CheckpointError(ToolsError):
    """Base of the checkpoint store's errors."""

    reason = "checkpoint_error"


class UnknownCheckpoint(CheckpointError):
    """A checkpoint id that the workspace's store does not hold (pruned, or never taken)."""

    reason = "unknown_checkpoint"


class CheckpointsOff(CheckpointError):
    """The store is turned off (``tools.checkpoints.enabled: false``) or the workspace is too big."""

    reason = "checkpoints_off"
