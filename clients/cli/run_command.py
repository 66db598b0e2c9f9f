"""``ai-coding run``'s work, without typer: one turn in a workspace, shown rich or as JSON lines.

:mod:`clients.cli.commands.run` declares the options for typer and calls :func:`run_command`; the
console script's fast path (:mod:`clients.cli.run_fast`) calls it straight from a command line it
parsed itself, skipping the framework's ~40 ms import and command build (bench/startup.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from clients.cli.failures import cli_errors, fail
from services.kernel.records import record

if TYPE_CHECKING:
    from clients.cli.attachments import Attachment
    from clients.cli.control import Setup
    from clients.cli.event_json import JsonLinesPrinter
    from clients.cli.session_rows import SessionLike
    from clients.cli.views import Event


@record
class RunOptions:
    """``ai-coding run``'s options, as its command line gave them (the defaults are typer's)."""

    prompt: str = ""
    workspace: str = ""
    as_json: bool = False
    auto_approve: bool = False
    continue_last: bool = False
    resume: str = ""
    session: str = ""
    model: str = ""
    timeout: float = 0.0
    verbose: bool = False
    plan: str = ""


def may_name_mcp(text: str) -> bool:
    """False when ``text`` cannot hold an MCP prompt command (``/server:prompt``, at its start) or
    resource mention (``@server:scheme://...``): most prompts, which then never import
    :mod:`clients.cli.mcp_input` (its parsers and records, ~6 ms of a warm run)."""
    return text.lstrip().startswith("/") or ("@" in text and "://" in text)


def _expand_mcp(setup: Setup, text: str, files: list[Attachment]) -> tuple[str, list[Attachment]]:
    """The prompt a ``/server:prompt`` command gives and the resources ``@server:uri`` names."""
    from clients.cli import mcp_input

    if not mcp_input.wants_gateway(text):
        return text, files
    try:
        expanded = mcp_input.expand_with_services(setup, text)
    except mcp_input.McpInputError as err:
        raise fail("run", str(err)) from None
    return expanded.text, [*files, *expanded.attachments]


def run_command(opts: RunOptions) -> int:
    """Run one turn; returns the exit code that says how it ended (raises :class:`CommandExit` on a
    usage error or an unreachable service, its line printed)."""
    from clients.cli import attachments, headless

    root, cwd = headless.workspace_and_cwd(opts.workspace)
    if not root.is_dir():
        raise fail("run", f"workspace {opts.workspace} is not a directory; pass an existing one with -w")
    if opts.plan and opts.prompt:
        raise fail("run", "--plan takes the topic; pass either a prompt or --plan TOPIC, not both")
    text = opts.plan.strip() or headless.read_prompt(opts.prompt, sys.stdin)
    if not text.strip():
        raise fail("run", "the prompt is empty; say what the agent should do (as an argument, or on stdin with `-`)")
    if problem := headless.not_utf8(text):
        raise fail("run", problem)
    if opts.timeout < 0:
        raise fail("run", f"--timeout {opts.timeout:g} is negative; give seconds, or 0 for the loop's own limit")
    session = opts.session  # --continue or --resume may pick one below
    if session and opts.resume:
        raise fail("run", "--session and --resume both name a session; pass one of them")
    try:
        files = [] if opts.plan else attachments.collect(text, cwd, root)
    except attachments.AttachmentError as err:
        raise fail("run", str(err)) from None
    with cli_errors("run"):
        from clients.cli import control

        setup = control.resolve(root)
        control.refuse_workspace(setup, root)
        # Nothing runs: the services start while this process imports what the turn needs.
        spawned = control.begin(setup, ["loop"], quiet=opts.as_json)
        import_asyncio_without_tls()
        from clients.cli import turn
        from clients.cli.turn import AutoApprover, NoTtyApprover, TtyApprover, drive_turn, open_session

        interactive = sys.stdin.isatty() and not opts.as_json
        # A plain run (a new session, nothing to expand) opens its session with the health check.
        early = None if (spawned is not None or may_name_mcp(text) or opts.continue_last or opts.resume
                         or session) else \
            turn.EarlyOpen(setup.endpoints["loop"], str(root), model=opts.model, auto_approve=opts.auto_approve,
                           cwd=str(cwd), interactive=interactive)
        # Asked on the channel the turn then uses: one connection to the loop for the whole run.
        control.ensure_running(setup, ["loop"], quiet=opts.as_json, spawned=spawned,
                               serving=early.serving if early is not None else
                               lambda name: turn.loop_serving(setup.endpoints[name]))
        if may_name_mcp(text):  # /server:prompt and @server:uri (docs/mcp.md)
            text, files = _expand_mcp(setup, text, files)
        if opts.continue_last or opts.resume or session:
            from clients.cli.commands.sessions import session_rows  # the session list: only when picking one

            session = pick_session(session_rows(root, warn_unreadable=True), opts.continue_last, opts.resume or session,
                                   "run")
        opened = early.take() if early is not None else None
        if opened is None:
            opened = open_session(setup.endpoints["loop"], str(root), session_id=session, model=opts.model,
                                  auto_approve=opts.auto_approve, cwd=str(cwd), interactive=interactive)
        for warning in opened.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        for item in files:
            note = " (cut at its size limit)" if item.truncated else ""
            print(f"attached {item.path} ({len(item.data):,} bytes){note}", file=sys.stderr)
        approver = AutoApprover() if opts.auto_approve else (TtyApprover() if sys.stdin.isatty() else NoTtyApprover())
        printer = _json_printer() if opts.as_json else None
        sink, close = (printer.write, lambda: None) if printer else _rich_sink(opts.verbose)
        try:
            outcome = drive_turn(setup.endpoints["loop"], opened.session_id, text, sink, approver,
                                 timeout=opts.timeout or None, attachments=files, plan=bool(opts.plan))
        finally:
            close()
    if printer is not None:
        printer.leave_if_reader_gone(outcome.exit_code)
    return outcome.exit_code


def import_asyncio_without_tls() -> None:
    """Import asyncio as a Python built without ``ssl`` has it: importing ``ssl`` (OpenSSL's library
    and the module's tables) took ~4.5 ms of the ~95 ms of CPU a warm run spends before its turn is
    sent, and nothing in this process makes a TLS connection through asyncio (gRPC's channels, a
    remote service's TLS included, do their own TLS in gRPC's core). ``ssl`` itself stays importable:
    only asyncio's TLS support is off in this process (a call that asks for it says "ssl module not
    available")."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    sys.modules["ssl"] = None  # type: ignore[assignment]  # what `import ssl` raises ImportError for
    try:
        import asyncio  # noqa: F401
    finally:
        del sys.modules["ssl"]


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
    """The rich renderer's sink, built when the first event arrives: its imports (rich and the
    renderer, ~25 ms of a warm run's CPU) then run while the loop works on the turn's first step
    (the stream's events wait in gRPC's buffers meanwhile), not before the turn is sent."""
    built: list[tuple[Callable[[Event], None], Callable[[], None]]] = []

    def sink(event: Event) -> None:
        if not built:
            built.append(_build_rich_sink(verbose))
        built[0][0](event)

    def close() -> None:
        if built:
            built[0][1]()

    return sink, close


def _build_rich_sink(verbose: bool) -> tuple[Callable[[Event], None], Callable[[], None]]:
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


__all__ = ["RunOptions", "pick_session", "run_command"]
