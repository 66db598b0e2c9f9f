"""The interactive client (``ai-coding`` with no subcommand, and ``ai-coding attach ID``)."""

from __future__ import annotations

from pathlib import Path


def run_repl(workspace: Path | str | None = None, session_id: str | None = None, attach: bool = False,
             first_message: str = "") -> int:
    """Open the REPL on ``workspace`` (default: the current dir), optionally on ``session_id`` and with
    ``first_message`` sent first; the exit code."""
    from clients.cli.repl.launch import run_repl as _run

    return _run(workspace, session_id, attach, first_message)


__all__ = ["run_repl"]
