"""Where the tool runtime meets the checkpoint store: a checkpoint before every changing call,
the interrupted restores finished at start, and their one line for the next session there."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

from services.tools.checkpoints.config import CheckpointsConfig
from services.tools.checkpoints.errors import CheckpointError
from services.tools.checkpoints.manager import CHANGING_TOOLS, CheckpointManager
from services.tools.checkpoints.snapshot import TooManyFiles
from services.tools.domain import ToolOutput

log = logging.getLogger("ai_coding.tools.checkpoints")


class CheckpointHook:
    """The runtime's handle on its checkpoint stores."""

    def __init__(self, config: CheckpointsConfig, base: Path) -> None:
        self.manager = CheckpointManager(config, base)
        self.recovered: dict[str, list[str]] = {}
        for root, line in self.manager.recover_all():
            self.recovered.setdefault(root, []).append(line)

    def close(self) -> None:
        """Release the stores' watches (the service stops)."""
        self.manager.close()

    def prepare(self, root: Path) -> None:
        """A session opened on ``root``: open its store and scan the workspace in the background,
        so the first step's checkpoint reads only what changed since, not every file."""
        manager = self.manager
        if manager.config.enabled and root not in manager.stores and root not in manager.refused:
            threading.Thread(target=self._warm, args=(root,), name="checkpoints-warm", daemon=True).start()

    def _warm(self, root: Path) -> None:
        try:
            self.manager.store(root).warm()
        except TooManyFiles as exc:
            self.manager.refuse(root, exc)
            log.warning("checkpoints: %s (%s)", exc, root)
        except (OSError, CheckpointError) as exc:
            log.info("checkpoints: the first scan of %s failed (the first checkpoint tries again): %s", root, exc)

    def recovered_lines(self, root: Path) -> list[str]:
        """The interrupted-restore lines of ``root`` (said once, to the first session opened there)."""
        return self.recovered.pop(str(root), [])

    async def before(self, tool: str, session_id: str, call_id: str, root: Path, when: str = "before"
                     ) -> str | Exception | None:
        """The checkpoint id taken before (or ``when="after"``) ``tool`` (None when the tool changes
        nothing or they are off; the error when taking it failed: the call still runs and its
        result says so)."""
        if tool not in CHANGING_TOOLS or not self.manager.config.enabled:
            return None
        try:
            store = self.manager.store(root)
            checkpoint = await asyncio.to_thread(store.create, session_id, f"{when} {tool}", call_id)
        except TooManyFiles as exc:
            self.manager.refuse(root, exc)
            log.warning("checkpoints: %s (%s)", exc, root)
            return exc
        except (OSError, CheckpointError) as exc:
            log.warning("checkpoints: could not take one before %s in %s: %s", call_id, root, exc)
            return exc
        return checkpoint.checkpoint_id

    async def after(self, out: ToolOutput, taken: str | Exception | None, tool: str, session_id: str, call_id: str,
                    root: Path) -> None:
        """Put the checkpoint taken before the call (or why there is none) into the result's data,
        and the one taken now, after it (what changes later is not the agent's)."""
        if isinstance(taken, str):
            out.data["checkpoint"] = taken
        elif taken is not None:
            out.data["checkpoint_error"] = f"no checkpoint before this call ({taken}); /undo cannot undo it"
        if not isinstance(taken, str):
            return
        later = await self.before(tool, session_id, call_id, root, "after")
        if isinstance(later, str):
            out.data["checkpoint_after"] = later
