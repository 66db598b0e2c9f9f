"""The interactive REPL: a prompt_toolkit input line that stays usable while a turn streams above it.

Output goes through prompt_toolkit's stdout proxy (``terminal.stdout_above_prompt``)
so lines printed by the event renderer land above the prompt; the unfinished line of assistant text is shown inside the
prompt itself (a half line printed above a live prompt would be erased on the
next redraw).

The parts: :mod:`.streams` (turns and the session's follow stream, each event delivered once),
:mod:`.commands` (slash commands), :mod:`.picker` (``/resume``), :mod:`.keys` (bindings); this
module reads lines, routes them, answers approvals and questions, and draws the prompt area.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import ThreadedCompleter
from prompt_toolkit.formatted_text import FormattedText
from rich.console import Console
from rich.text import Text

from clients.cli import mcp_input, session_views, views
from clients.cli.approvals import CHOICES as APPROVAL_CHOICES
from clients.cli.approvals import HINT as APPROVAL_HINT
from clients.cli.approvals import approval_decision, is_approval_answer
from clients.cli.connection.loop import ClientError, LoopClient
from clients.cli.connection.services import ServiceClients
from clients.cli.diffview import FileDiff, diff_text, fold_hint, recorded_changes
from clients.cli.progress import REPL_KEYS, Progress
from clients.cli.render import EventRenderer
from clients.cli.repl import mcp_complete, resume
from clients.cli.repl.commands import SlashCommands
from clients.cli.repl.jobs import JobWatcher
from clients.cli.repl.keys import UNFOLD_KEY, build_bindings
from clients.cli.repl.picker import SessionPicker
from clients.cli.repl.recovery import ServiceRestorer
from clients.cli.repl.service_commands import Output, PendingForget, confirm_forget
from clients.cli.repl.state import ctrl_c, question_answer
from clients.cli.repl.streams import TurnStreams
from clients.cli.repl.terminal import SlashCompleter, Timings, log_crash, stdout_above_prompt, terminal_width
from clients.cli.slash import SlashCommand, SlashReply, help_text, parse_slash
from clients.cli.textsafe import literal, visible_controls

_PARTIAL_SHOWN = 2000


class Repl:
    """One interactive client on one session (``attach`` follows a session another client drives)."""

    def __init__(self, client: LoopClient, workspace: str, attach: bool = False,
                 log_path: Path | None = None, services: ServiceClients | None = None) -> None:
        self.client = client
        self.services = services
        # A `/memory forget` waiting for its y/N; MCP server names seen by the last `/mcp` (completion).
        self.confirm: PendingForget | None = None
        self.mcp_names: list[str] = []
        self.complete_mcp_argument: mcp_complete.ArgumentCompleter = mcp_complete.no_completion
        self.log_path = log_path
        self.workspace = workspace
        self.attach_mode = attach
        self.session_id = ""
        self.last_seq = 0
        self.turn_running = False
        self.last_answer: tuple[str, float] | None = None  # (key, monotonic time) of the last one-key approval
        self.queued: list[str] = []
        self.session_rows: list[resume.SessionRow] = []
        self.console = Console()
        self.renderer = EventRenderer(self.console, line_buffered=True, fold_hint=fold_hint(UNFOLD_KEY))
        self._tasks: set[asyncio.Task[None]] = set()
        self.streams = TurnStreams(self)
        self.commands = SlashCommands(self)
        self.picker = SessionPicker(self)
        self.jobs = JobWatcher(self)
        self.asking_plan = False
        """A bare /plan asked "What should I plan?": the next line is the topic."""
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.timings = Timings(os.environ.get("AI_CODING_CLIENT_TIMINGS", ""))
        self.last_ctrl_c: float | None = None
        self.progress = Progress(keys=REPL_KEYS)  # the status line above the prompt while a turn runs
        self.restorer = ServiceRestorer(workspace)  # restarts the services this REPL lost
        self.prompt: PromptSession[str] = PromptSession(
            message=self._message, key_bindings=build_bindings(self),
            completer=ThreadedCompleter(SlashCompleter(self)), complete_while_typing=True,
            reserve_space_for_menu=4)

    # ---- lifecycle ----

    async def run(self, session_id: str, first_message: str = "") -> int:
        """Open (or resume) the session and read lines until the user exits; returns the exit code.
        ``first_message`` (``ai-coding "PROMPT"``) is sent as if typed at the first prompt."""
        with stdout_above_prompt():
            self.console = Console(file=sys.stdout, force_terminal=True, highlight=False)
            self.renderer.console = self.console
            self.sync_width()
            try:
                opened = await self.client.open_session(self.workspace, session_id)
            except ClientError as err:
                self.error(str(err))
                await self.client.close()
                return 1
            await self.switch_to(opened, redraw=bool(session_id), replay_in_flight=self.attach_mode)
            self.spawn(self.picker.refresh_rows_quietly())  # for `/resume <words>` completion
            loop = asyncio.get_running_loop()
            self.complete_mcp_argument = mcp_complete.gateway_completer(self.services, loop)
            # prompt_toolkit cooks the terminal while it prints above the prompt; a Ctrl-C typed
            # in that window arrives as SIGINT and must do what the key does, not kill the REPL.
            loop.add_signal_handler(signal.SIGINT, self.press_ctrl_c)
            if first_message.strip():
                self.submit_line(first_message)
            try:
                await self._read_lines()
            finally:
                loop.remove_signal_handler(signal.SIGINT)
            await self._shutdown()
        return 0

    async def _read_lines(self) -> None:
        """One prompt application for the whole session; Enter hands lines over without leaving it.

        (Leaving and re-entering prompt_async on every Enter cost 10-35 ms per line, measured
        with bench/client.py's pty driver; a key binding that queues the line costs 2-12 ms.)
        """
        app_task = asyncio.ensure_future(self.prompt.prompt_async(handle_sigint=False))
        app_task.add_done_callback(lambda _: self._lines.put_nowait(None))
        while True:
            line = await self._lines.get()
            if line is None:
                break
            try:
                if await self._submit(line) == "quit":
                    break
            except ClientError as err:
                self.error(str(err))
            except Exception as err:  # keep the session usable; the traceback goes to the log
                self.report_crash(err)
        if not app_task.done():
            self.prompt.app.exit()
        with contextlib.suppress(EOFError, KeyboardInterrupt, asyncio.CancelledError):
            await app_task

    async def _shutdown(self) -> None:
        if self.turn_running:
            self.note(f"the turn goes on in the loop; `ai-coding attach {self.session_id[:12]}` follows it")
        self.streams.close()
        for task in list(self._tasks):
            task.cancel()
        await self.client.close()
        if self.services is not None:
            await self.services.close()

    async def switch_to(self, opened: session_views.OpenedSession, redraw: bool,
                        replay_in_flight: bool = False) -> None:
        """Make ``opened`` this REPL's session (``redraw``: print its history first)."""
        self.streams.leave_session(opened.session_id)
        self.progress = Progress(keys=REPL_KEYS)  # the other session's children end in its own notes
        self.session_id = opened.session_id
        self.last_seq = opened.last_seq
        self.renderer.last_seq = opened.last_seq
        header = f"ai-coding · session {opened.session_id[:12]} · model {opened.model or 'default'}"
        self.print(literal(header + " · /help for commands", "dim"))
        for warning in opened.warnings:
            self.print(literal(f"warning: {warning}", "yellow"))
        changes: list[FileDiff] = []
        if redraw and opened.message_count:
            got = await self.client.get_session(self.workspace, opened.session_id)
            self.redraw(resume.history_items(got.messages_json), resume.plan_lines(got.plan_json))
            changes = recorded_changes(got.messages_json)  # /diff session: the record's, not this client's memory
            self.spawn(self.jobs.check())  # jobs the session still runs join the status line
        self.renderer.new_session(changes)
        self.streams.follow_session(opened.last_seq, replay_in_flight)

    # ---- submitted lines ----

    async def _submit(self, line: str) -> str:
        if self.renderer.pending_approval is not None:
            if is_approval_answer(line):
                self.answer_approval(approval_decision(line))
                return ""
            # Text typed before the approval appeared is input, not an answer: queue it.
            self.streams.send_input(line)
            self.note(f"an approval is still waiting: {APPROVAL_HINT}")
            return ""
        if self.renderer.pending_question is not None:
            self.answer_question(question_answer(line, list(self.renderer.pending_question.options)))
            return ""
        if self.confirm is not None:
            pending, self.confirm = self.confirm, None
            self.echo(line)
            if self.services is not None:
                self.show(await confirm_forget(self.services.memory, pending, line))
            return ""
        if self.picker.rows is not None:
            self.echo(line)
            await self.picker.pick(line)
            return ""
        if self.asking_plan:
            self.asking_plan = False
            self.echo(line)
            if line.strip():
                self.streams.send_plan(line.strip())
            else:
                self.print(literal("  no topic: nothing planned", "dim"))
            return ""
        text = line.strip()
        if not text:
            return ""
        if text.startswith("/"):
            self.echo(line)
        if text == "/":
            self.print(literal(help_text()))
            return ""
        if mcp_input.wants_gateway(text) and self.services is not None:  # /server:prompt, @server:uri
            await self._send_mcp_input(text)
            return ""
        parsed = parse_slash(text)
        if isinstance(parsed, SlashReply):
            self.print(literal(parsed.text, "yellow"))
            return ""
        if isinstance(parsed, SlashCommand):
            return await self.commands.run(parsed)
        self.streams.send_input(line)
        return ""

    async def _send_mcp_input(self, text: str) -> None:
        """Run the server prompt / read the resources the line names, then send it (docs/mcp.md)."""
        assert self.services is not None
        try:
            expanded = await mcp_input.expand(text, self.services.mcp)
        except (mcp_input.McpInputError, ClientError) as err:
            self.print(literal(f"  {err}", "red"))
            return
        self.streams.send_input(expanded.text, expanded.attachments)

    def send_input(self, text: str) -> None:
        """Start a turn with ``text`` (or queue it behind the running one)."""
        self.streams.send_input(text)

    def send_plan(self, topic: str) -> None:
        """Plan ``topic`` and run its steps."""
        self.streams.send_plan(topic)

    def keep_ticking(self) -> None:
        """Redraw the status line every second while something runs."""
        self.streams.keep_ticking()

    def watch_jobs(self) -> None:
        """Keep the status line's background jobs up to date while it shows one."""
        self.jobs.watch()

    async def resume_session(self, args: str) -> None:
        """``/resume [args]``."""
        await self.picker.open(args)

    def show(self, out: Output) -> None:
        """Print a service command's lines."""
        for text, style in out.lines:
            self.print(literal(text, style))

    def busy(self) -> bool:
        """True (and says so) while a turn runs: switching sessions then would orphan its stream."""
        if self.turn_running:
            self.print(literal("a turn is running: wait for it or press Ctrl-C first", "yellow"))
        return self.turn_running

    def redraw(self, items: list[resume.HistoryItem], plan: list[tuple[str, str]] | None = None) -> None:
        """Print a resumed session's history."""
        for text, style in resume.history_lines(items, plan):
            self.print(literal(text, style))

    # ---- tasks ----

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``coro`` as a task of this REPL (cancelled at exit; a crash is reported, not raised)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        err = task.exception()
        assert err is not None
        self.report_crash(err)

    def report_crash(self, err: BaseException) -> None:
        """One readable line for an unexpected error (its traceback goes to the log)."""
        if self.log_path is not None:
            log_crash(self.log_path, err)
        where = f" (details in {self.log_path})" if self.log_path else ""
        self.error(f"{type(err).__name__}: {err}{where}")
        self.turn_running = False
        self.invalidate()


    def answer_approval(self, decision: views.Decision) -> None:
        """Send ``decision`` for the pending approval (once; later keys find nothing pending)."""
        pending = self.renderer.pending_approval
        stream = self.streams.control_stream()
        if pending is None or stream is None:
            return
        self.renderer.pending_approval = None
        stream.approve(pending.request_id, decision)
        self.invalidate()

    def answer_question(self, answer: str) -> None:
        """Send ``answer`` to the pending ask_user question."""
        pending = self.renderer.pending_question
        stream = self.streams.control_stream()
        if pending is None or stream is None:
            return
        self.renderer.pending_question = None
        stream.answer(pending.request_id, answer)
        self.invalidate()

    def press_ctrl_c(self) -> None:
        """Ctrl-C, as a key in raw mode or as SIGINT (the terminal is cooked while output is printed)."""
        now = time.monotonic()
        buffer = self.prompt.default_buffer
        action = ctrl_c(turn_running=self.turn_running, line_empty=not buffer.text, now=now,
                        last_press=self.last_ctrl_c).action
        self.last_ctrl_c = now
        if action == "abort_turn":
            self.queued.clear()
            self.interrupt(views.Scope.TURN, "aborting the turn…")
        elif action == "clear_line":
            buffer.reset()
        elif action == "warn":
            self.note("press Ctrl-C again to exit (or Ctrl-D)")
        elif self.prompt.app.is_running:
            self.prompt.app.exit(exception=EOFError())
        else:
            self._lines.put_nowait(None)

    def unfold_diff(self) -> None:
        """The unfold key: the last diff drawn folded, whole (once; /diff has them all)."""
        change = self.renderer.diffs.unfold()
        if change is None:
            self.note("no folded diff to unfold (/diff shows the turn's changes, /diff session the session's)")
            return
        self.print(literal(f"  {change.path} · +{change.added} -{change.removed} · whole", "bold"))
        self.print(diff_text(change.diff, fold=None))

    def interrupt(self, scope: views.Scope, note: str) -> None:
        """Ask the loop to cancel the tool batch or the turn, and say so."""
        stream = self.streams.control_stream()
        if stream is None:
            return
        stream.interrupt(scope)
        self.note(note)

    # ---- output ----

    def _message(self) -> FormattedText:
        parts: list[tuple[str, str]] = []
        partial = self.renderer.partial_text
        if partial:
            self.timings.drawn()
            parts.append(("", visible_controls(partial[-_PARTIAL_SHOWN:]) + "\n"))
        if self.renderer.pending_approval is not None:
            parts.append(("fg:ansimagenta bold", f"approve? {APPROVAL_CHOICES} "))
        elif self.renderer.pending_question is not None:
            parts.append(("fg:ansicyan bold", "answer› "))
        elif self.picker.rows is not None:
            parts.append(("bold", "resume› "))
        elif self.confirm is not None:
            parts.append(("fg:ansiyellow bold", "forget? [y/N] "))
        elif self.asking_plan:
            parts.append(("bold", "plan› "))
        else:
            status = self.progress.line(time.monotonic())  # a running turn's, or background children's
            if status:
                parts.append(("fg:ansibrightblack", f"⋯ {status}\n"))
            parts.append(("fg:ansibrightblack", "… ") if self.turn_running else ("bold", "› "))
        return FormattedText(parts)

    def invalidate(self) -> None:
        """Redraw the prompt area (the status line, the partial text)."""
        app = self.prompt.app
        if app.is_running:
            app.invalidate()

    def sync_width(self) -> None:
        """Print at the terminal's current width."""
        self.console.width = terminal_width()

    def submit_line(self, line: str) -> None:
        """Hand a line typed at the prompt to the REPL (Enter's binding calls this)."""
        self.timings.reset(line)
        self.timings.mark("key")
        self._lines.put_nowait(line)

    def echo(self, line: str) -> None:
        """Show a submitted line as '› line'."""
        self.print(literal(f"› {line}", "bold"))

    def print(self, text: Text) -> None:
        """Print above the prompt."""
        self.renderer.print(text)

    def note(self, text: str) -> None:
        """A dim one-line note from the client itself (cut, never wrapped)."""
        self.renderer.print(literal(f"  {text}", "dim"), wrap=False)

    def error(self, text: str) -> None:
        """'error: text' in red."""
        self.renderer.print(literal(f"error: {text}", "red"))

