"""``ai-coding run "PROMPT"``: one non-interactive turn, rich or JSON lines (the options; the
command itself is :mod:`clients.cli.run_command`, which ``ai-coding run``'s fast path calls without typer)."""

from __future__ import annotations

import typer

from clients.cli import exit_codes
from clients.cli.run_command import RunOptions, pick_session, run_command


def run(
    prompt: str = typer.Argument("", help="What to ask the agent. `-` (or nothing, with input piped in) reads it "
                                       "from stdin; `@path` attaches a file (text, or an image)."),
    workspace: str = typer.Option("", "--workspace", "-w",
                                  help="Workspace root (default: the git root above the current dir, else the "
                                       "current dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per event per line."),
    auto_approve: bool = typer.Option(False, "--auto-approve", help="Allow WARN-level tools without asking."),
    continue_last: bool = typer.Option(False, "--continue", "-c",
                                       help="Continue the most recent session of this workspace."),
    resume: str = typer.Option("", "--resume", "-r",
                               help="Resume session ID (or a unique prefix); a prefix that matches several lists "
                                    "them; a bare -r lists the sessions."),
    session: str = typer.Option("", "--session", help="Same as --resume ID."),
    model: str = typer.Option("", "--model", "-m", help="Model name from the config's models table."),
    timeout: float = typer.Option(0.0, "--timeout", help="Interrupt the turn after this many seconds and exit 4 (0: the loop's own limit)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show reasoning and more detail."),
    plan: str = typer.Option("", "--plan", help="Plan TOPIC and run its steps (as /plan does); exits 7 when an "
                                               "item is blocked or stalled."),
) -> None:
    """Run one turn in WORKSPACE and exit with a code that says how it ended (`ai-coding -p PROMPT` is the same)."""
    raise typer.Exit(run_command(RunOptions(
        prompt=prompt, workspace=workspace, as_json=as_json, auto_approve=auto_approve,
        continue_last=continue_last, resume=resume, session=session, model=model, timeout=timeout,
        verbose=verbose, plan=plan)))


def register(app: typer.Typer) -> None:
    """Add ``run`` to the main app (its help lists the exit codes)."""
    app.command(epilog=exit_codes.EPILOG)(run)


__all__ = ["pick_session", "register", "run"]
