"""``ai-coding run "PROMPT"``: one non-interactive turn, rich or JSON lines."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import typer

from clients.cli import exit_codes
from clients.cli.commands.common import cli_errors, fail

if TYPE_CHECKING:
    from clients.cli.event_json import JsonLinesPrinter
    from clients.cli.session_rows import SessionLike
    from clients.cli.views import Event


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
    from clients.cli import attachments, control, headless, mcp_input, turn
    from clients.cli.turn import AutoApprover, NoTtyApprover, TtyApprover, drive_turn, open_session

    root, cwd = headless.workspace_and_cwd(workspace)
    if not root.is_dir():
        raise fail("run", f"workspace {workspace} is not a directory; pass an existing one with -w")
    if plan and prompt:
        raise fail("run", "--plan takes the topic; pass either a prompt or --plan TOPIC, not both")
    text = plan.strip() or headless.read_prompt(prompt, sys.stdin)
    if not text.strip():
        raise fail("run", "the prompt is empty; say what the agent should do (as an argument, or on stdin with `-`)")
    if problem := headless.not_utf8(text):
        raise fail("run", problem)
    if timeout < 0:
        raise fail("run", f"--timeout {timeout:g} is negative; give seconds, or 0 for the loop's own limit")
    if session and resume:
        raise fail("run", "--session and --resume both name a session; pass one of them")
    try:
        files = [] if plan else attachments.collect(text, cwd, root)
    except attachments.AttachmentError as err:
        raise fail("run", str(err)) from None
    with cli_errors("run"):
        setup = control.resolve(root)
        # Asked on the channel the turn then uses: one connection to the loop for the whole run.
        control.ensure_running(setup, ["loop"], quiet=as_json,
                               serving=lambda name: turn.loop_serving(setup.endpoints[name]))
        if mcp_input.wants_gateway(text):  # /server:prompt and @server:uri (docs/mcp.md)
            try:
                expanded = mcp_input.expand_with_services(setup, text)
            except mcp_input.McpInputError as err:
                raise fail("run", str(err)) from None
            text, files = expanded.text, [*files, *expanded.attachments]
        if continue_last or resume or session:
            from clients.cli.commands.sessions import session_rows  # the session list: only when picking one

            session = pick_session(session_rows(root, warn_unreadable=True), continue_last, resume or session, "run")
        opened = open_session(setup.endpoints["loop"], str(root), session_id=session, model=model,
                              auto_approve=auto_approve, cwd=str(cwd),
                              interactive=sys.stdin.isatty() and not as_json)
        for warning in opened.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        for item in files:
            note = " (cut at its size limit)" if item.truncated else ""
            print(f"attached {item.path} ({len(item.data):,} bytes){note}", file=sys.stderr)
        approver = AutoApprover() if auto_approve else (TtyApprover() if sys.stdin.isatty() else NoTtyApprover())
        printer = _json_printer() if as_json else None
        sink, close = (printer.write, lambda: None) if printer else _rich_sink(verbose)
        try:
            outcome = drive_turn(setup.endpoints["loop"], opened.session_id, text, sink, approver,
                                 timeout=timeout or None, attachments=files, plan=bool(plan))
        finally:
            close()
    if printer is not None:
        printer.leave_if_reader_gone(outcome.exit_code)
    raise typer.Exit(outcome.exit_code)


def pick_session(rows: Sequence[SessionLike], continue_last: bool, resume: str, command: str) -> str:
    """The session id --continue / --resume mean ("" = a new one); when they name none or several,
    print the candidates and exit 2."""
    from clients.cli import headless
    from clients.cli.session_rows import session_line

    choice = headless.choose_session(rows, continue_last=continue_last, resume=resume)
    if choice.note:
        print(f"ai-coding {command}: {choice.note}", file=sys.stderr)
    if not choice.problem:
        return choice.session_id
    for row in choice.candidates:
        print(f"  {session_line(row, dated=True)}", file=sys.stderr)
    raise fail(command, choice.problem)


def _json_printer() -> JsonLinesPrinter:
    from clients.cli.event_json import JsonLinesPrinter  # only `--json` prints the wire's JSON mapping

    return JsonLinesPrinter(sys.stdout)


def _rich_sink(verbose: bool) -> tuple[Callable[[Event], None], Callable[[], None]]:
    from rich.console import Console

    from clients.cli.diffview import RUN_HINT
    from clients.cli.render import EventRenderer

    # Without a terminal (a CI log, `> out.txt`) nothing is wrapped or cut at a guessed width.
    console = Console(highlight=False, soft_wrap=not sys.stdout.isatty())
    renderer = EventRenderer(console, verbose=verbose, fold_hint=RUN_HINT)
    if not console.is_terminal:
        return renderer.handle, renderer.close
    from clients.cli.progress import TerminalTicker

    ticker = TerminalTicker(renderer.handle, sys.stdout, lambda: renderer.mid_line, width=lambda: console.width)

    def close() -> None:
        ticker.close()
        renderer.close()

    return ticker.sink, close


def register(app: typer.Typer) -> None:
    """Add ``run`` to the main app (its help lists the exit codes)."""
    app.command(epilog=exit_codes.EPILOG)(run)
