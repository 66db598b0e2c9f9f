"""``ai-coding attach ID``: follow a session another terminal drives, live, and answer its approvals."""

from __future__ import annotations

from pathlib import Path

import typer


def attach(
    session: str = typer.Argument(..., help="Session id or unique prefix (see `ai-coding sessions list`)."),
    workspace: str = typer.Option(".", "--workspace", "-w", help="Workspace root (default: current dir)."),
) -> None:
    """Attach to a session: its running turn from the start, then every event live."""
    from clients.cli.repl import run_repl

    raise typer.Exit(run_repl(Path(workspace).expanduser().resolve(), session, attach=True))


def register(app: typer.Typer) -> None:
    """Add ``attach`` to the main app."""
    app.command()(attach)
