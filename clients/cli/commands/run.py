"""``ai-coding run "PROMPT"``: one non-interactive turn, rich or JSON lines."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from clients.cli import exit_codes
from clients.cli.commands.common import cli_errors, fail

if TYPE_CHECKING:
    from clients.cli.views import Event


def run(
    prompt: str = typer.Argument(..., help="What to ask the agent."),
    workspace: str = typer.Option(".", "--workspace", "-w", help="Workspace root (default: current dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per event per line."),
    auto_approve: bool = typer.Option(False, "--auto-approve", help="Allow WARN-level tools without asking."),
    session: str = typer.Option("", "--session", help="Continue this session (id or unique prefix)."),
    model: str = typer.Option("", "--model", "-m", help="Model name from the config's models table."),
    timeout: float = typer.Option(0.0, "--timeout", help="Interrupt the turn after this many seconds and exit 4 (0: the loop's own limit)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show reasoning and more detail."),
) -> None:
    """Run one turn in WORKSPACE and exit with a code that says how it ended."""
    from clients.cli import control
    from clients.cli.event_json import JsonLinesPrinter
    from clients.cli.turn import AutoApprover, NoTtyApprover, TtyApprover, drive_turn, open_session

    root = Path(workspace).expanduser().resolve()
    if not root.is_dir():
        raise fail("run", f"workspace {workspace} is not a directory; pass an existing one with -w")
    if not prompt.strip():
        raise fail("run", "the prompt is empty; say what the agent should do")
    if timeout < 0:
        raise fail("run", f"--timeout {timeout:g} is negative; give seconds, or 0 for the loop's own limit")
    with cli_errors("run"):
        setup = control.resolve(root)
        control.ensure_running(setup, ["loop"], quiet=as_json)
        opened = open_session(setup.endpoints["loop"], str(root), session_id=session, model=model,
                              auto_approve=auto_approve)
        for warning in opened.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        approver = AutoApprover() if auto_approve else (TtyApprover() if sys.stdin.isatty() else NoTtyApprover())
        printer = JsonLinesPrinter(sys.stdout) if as_json else None
        sink, close = (printer.write, lambda: None) if printer else _rich_sink(verbose)
        try:
            outcome = drive_turn(setup.endpoints["loop"], opened.session_id, prompt, sink, approver,
                                 timeout=timeout or None)
        finally:
            close()
    if printer is not None:
        printer.leave_if_reader_gone(outcome.exit_code)
    raise typer.Exit(outcome.exit_code)


def _rich_sink(verbose: bool) -> tuple[Callable[[Event], None], Callable[[], None]]:
    from rich.console import Console

    from clients.cli.render import EventRenderer

    renderer = EventRenderer(Console(highlight=False), verbose=verbose)
    return renderer.handle, renderer.close


def register(app: typer.Typer) -> None:
    """Add ``run`` to the main app (its help lists the exit codes)."""
    app.command(epilog=exit_codes.EPILOG)(run)
