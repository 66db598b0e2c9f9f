"""The interactive REPL: a prompt_toolkit input line that stays usable while a turn streams above it.

Output goes through prompt_toolkit's stdout proxy (``terminal.stdout_above_prompt``)
so lines printed by the event renderer land above the prompt; the unfinished line of assistant text is shown inside the
prompt itself (a half line printed above a live prompt would be erased on the
next redraw). Every event from every stream goes through ``_deliver``, which
drops duplicates by sequence number, so a session followed by an attach stream
and a turn stream at once renders each event exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import signal
import sys
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import ThreadedCompleter
from prompt_toolkit.formatted_text import FormattedText
from rich.console import Console
from rich.text import Text

from clients.cli import attachments, mcp_input, views
from clients.cli.approvals import CHOICES as APPROVAL_CHOICES
from clients.cli.approvals import HINT as APPROVAL_HINT
from clients.cli.approvals import approval_decision, is_approval_answer
from clients.cli.connection.loop import ClientError, LoopClient, TurnStream
from clients.cli.connection.services import ServiceClients
from clients.cli.cost import cost_report
from clients.cli.diffview import diff_command
from clients.cli.driver import TurnDriver
from clients.cli.progress import REPL_KEYS, Progress, tick_while
from clients.cli.render import EventRenderer, background_done_line, last_tool_text
from clients.cli.repl import mcp_complete, resume, rewind_picker
from clients.cli.repl.keys import build_bindings
from clients.cli.repl.recovery import OFFERED, ServiceRestorer, lost_turn
from clients.cli.repl.service_commands import (
    Output,
    PendingForget,
    confirm_forget,
    mcp_command,
    memory_command,
)
from clients.cli.repl.state import ctrl_c, question_answer
from clients.cli.repl.terminal import SlashCompleter, Timings, log_crash, stdout_above_prompt, terminal_width
from clients.cli.slash import SlashCommand, SlashReply, help_text, parse_slash
from clients.cli.textsafe import literal, visible_controls

REVIEW_PROMPT = ("Review the current git diff of this workspace (run `git diff` and `git diff --staged`): "
                 "point out bugs, risky changes and missing tests, most important first.")
_PARTIAL_SHOWN = 2000
# How often an attached client re-opens its follow stream once the session went idle.
FOLLOW_POLL_SECONDS = 0.3
# ... backing off to this while nothing happens (a turn another client starts shows within it).
FOLLOW_POLL_MAX_SECONDS = 1.0
# How long a turn's Start is retried while the loop service is restarting: the supervisor's
# restart measured 1-4 s here, but a loaded machine (a whole test suite running) stretches the
# loop's start, and giving up loses nothing but makes the user type the input again.
START_RETRY_SECONDS = 30.0


class Repl:
    """One interactive client on one session (``attach`` follows a session another client drives)."""

    def __init__(self, client: LoopClient, workspace: str, attach: bool = False,
                 log_path: Path | None = None, services: ServiceClients | None = None) -> None:
        self.client = client
        self.services = services
        # A `/memory forget` waiting for its y/N; MCP server names seen by the last `/mcp` (completion).
        self._confirm: PendingForget | None = None
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
        self.renderer = EventRenderer(self.console, line_buffered=True)
        self._follower: TurnStream | None = None
        self._follower_task: asyncio.Task[None] | None = None
        self._turn_stream: TurnStream | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._picker: list[resume.SessionRow] | None = None
        self._asking_plan = False
        """A bare /plan asked "What should I plan?": the next line is the topic."""
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._timings = Timings(os.environ.get("AI_CODING_CLIENT_TIMINGS", ""))
        self.last_ctrl_c: float | None = None
        self._shown_queued: list[str] = []
        # Background subagent runs of this session still running (their end is shown even after a switch).
        self._background: set[str] = set()
        # True while the next TurnStarted is for a line the prompt already shows.
        self._echoed_input = False
        self.progress = Progress(keys=REPL_KEYS)  # the status line above the prompt while a turn runs
        self._ticking = False
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
            self._sync_width()
            try:
                opened = await self.client.open_session(self.workspace, session_id)
            except ClientError as err:
                self._error(str(err))
                await self.client.close()
                return 1
            await self._switch_to(opened, redraw=bool(session_id), replay_in_flight=self.attach_mode)
            self._spawn(self._refresh_rows_quietly())  # for `/resume <words>` completion
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
                self._error(str(err))
            except Exception as err:  # keep the session usable; the traceback goes to the log
                self._report_crash(err)
        if not app_task.done():
            self.prompt.app.exit()
        with contextlib.suppress(EOFError, KeyboardInterrupt, asyncio.CancelledError):
            await app_task

    async def _shutdown(self) -> None:
        if self.turn_running:
            self.note(f"the turn goes on in the loop; `ai-coding attach {self.session_id[:12]}` follows it")
        for stream in (self._turn_stream, self._follower):
            if stream is not None:
                stream.close()
        for task in list(self._tasks):
            task.cancel()
        await self.client.close()
        if self.services is not None:
            await self.services.close()

    async def _switch_to(self, opened: views.OpenedSession, redraw: bool,
                         replay_in_flight: bool = False) -> None:
        if self._background and self.session_id and opened.session_id != self.session_id:
            self._spawn(self._watch_background(self.session_id, self.last_seq, set(self._background)))
        self._background = set()
        self.progress = Progress(keys=REPL_KEYS)  # the other session's children end in its own notes
        self.session_id = opened.session_id
        self.last_seq = opened.last_seq
        self.renderer.last_seq = opened.last_seq
        header = f"ai-coding · session {opened.session_id[:12]} · model {opened.model or 'default'}"
        self._print(literal(header + " · /help for commands", "dim"))
        for warning in opened.warnings:
            self._print(literal(f"warning: {warning}", "yellow"))
        if redraw and opened.message_count:
            got = await self.client.get_session(self.workspace, opened.session_id)
            self._redraw(resume.history_items(got.messages_json), resume.plan_lines(got.plan_json))
        self._follow_session(opened.last_seq, replay_in_flight)

    # ---- submitted lines ----

    async def _submit(self, line: str) -> str:
        if self.renderer.pending_approval is not None:
            if is_approval_answer(line):
                self.answer_approval(approval_decision(line))
                return ""
            # Text typed before the approval appeared is input, not an answer: queue it.
            self._send_input(line)
            self.note(f"an approval is still waiting: {APPROVAL_HINT}")
            return ""
        if self.renderer.pending_question is not None:
            self.answer_question(question_answer(line, list(self.renderer.pending_question.options)))
            return ""
        if self._confirm is not None:
            pending, self._confirm = self._confirm, None
            self._echo(line)
            if self.services is not None:
                self._show(await confirm_forget(self.services.memory, pending, line))
            return ""
        if self._picker is not None:
            self._echo(line)
            await self._pick(line)
            return ""
        if self._asking_plan:
            self._asking_plan = False
            self._echo(line)
            if line.strip():
                self._send_plan(line.strip())
            else:
                self._print(literal("  no topic: nothing planned", "dim"))
            return ""
        text = line.strip()
        if not text:
            return ""
        if text.startswith("/"):
            self._echo(line)
        if text == "/":
            self._print(literal(help_text()))
            return ""
        if mcp_input.wants_gateway(text) and self.services is not None:  # /server:prompt, @server:uri
            await self._send_mcp_input(text)
            return ""
        parsed = parse_slash(text)
        if isinstance(parsed, SlashReply):
            self._print(literal(parsed.text, "yellow"))
            return ""
        if isinstance(parsed, SlashCommand):
            return await self._command(parsed)
        self._send_input(line)
        return ""

    async def _send_mcp_input(self, text: str) -> None:
        """Run the server prompt / read the resources the line names, then send it (docs/mcp.md)."""
        assert self.services is not None
        try:
            expanded = await mcp_input.expand(text, self.services.mcp)
        except (mcp_input.McpInputError, ClientError) as err:
            self._print(literal(f"  {err}", "red"))
            return
        self._send_input(expanded.text, expanded.attachments)

    def _send_input(self, text: str, extra: Sequence[attachments.Attachment] = ()) -> None:
        if self.turn_running:
            stream = self._control_stream()
            self.queued.append(text)
            self._shown_queued.append(text)
            if stream is not None:
                stream.queue(text)
            self._print(literal(f"  queued #{len(self.queued)}: {text.strip()[:60]}", "dim"))
            return
        try:
            files = [*attachments.collect(text, Path(os.getcwd()), Path(self.workspace)), *extra]  # as `run` reads them
        except attachments.AttachmentError as err:
            self._print(literal(f"  {err}", "red"))
            return
        self.turn_running = True
        self._echoed_input = True
        driver = self._driver()
        stream = driver.start(text, files)
        self._timings.mark("send")
        self._spawn(self._follow_turn(driver, stream, text, files))
        self._echo(text)  # after the start: the turn should not wait for the echo's redraw
        for item in files:
            self._print(literal(f"  attached {item.path} ({len(item.data):,} bytes)", "dim"))

    async def _command(self, cmd: SlashCommand) -> str:
        name, args = cmd.name, cmd.args
        if name == "quit":
            return "quit"
        if name == "help":
            self._print(literal(help_text()))
        elif name == "last":
            last = self.renderer.last_tool
            self._print(literal(last_tool_text(last)) if last else literal("no tool call yet", "dim"))
        elif name == "diff":
            self._print(diff_command(self.renderer.diffs, args))
        elif name == "cost":
            budget = await self.client.run_command(self.session_id, "budget", "")
            self._print(literal("\n".join(cost_report(self.renderer.last_usage, budget.data_json))))
        elif name == "thinking":
            reasoning = self.renderer.last_reasoning
            self._print(literal(reasoning, "dim italic") if reasoning else literal("no reasoning yet", "dim"))
        elif name == "clear":
            if not self._busy():
                await self._switch_to(await self.client.open_session(self.workspace, ""), redraw=False)
        elif name == "resume":
            await self._resume(args)
        elif name == "review":
            self._send_input(REVIEW_PROMPT)
        elif name == "plan":
            self._plan(args)
        elif name in ("memory", "mcp"):
            await self._service_command(name, args)
        else:
            await (rewind_picker.run(self) if rewind_picker.opens(name, args) else self._loop_command(name, args))
        return ""

    def _plan(self, topic: str) -> None:
        """``/plan <topic>`` plans and runs the steps; a bare ``/plan`` asks for the topic first."""
        if self.turn_running:
            self._print(literal("a turn is running: /plan when it has ended", "yellow"))
        elif not topic:
            self._asking_plan = True
            self._print(literal("What should I plan? (type the topic; Enter alone cancels)", "bold"))
        else:
            self._send_plan(topic)

    def _send_plan(self, topic: str) -> None:
        self.turn_running = True
        driver = self._driver(plan=True)
        stream = driver.start(topic)
        self._spawn(self._follow_turn(driver, stream, topic))

    async def _service_command(self, name: str, args: str) -> None:
        """``/memory`` and ``/mcp``: straight to the memory service / MCP gateway, not through the loop."""
        if self.services is None:
            self._print(literal(f"/{name} needs the {name} service's endpoint; this client was started without it",
                                "yellow"))
            return
        if name == "memory":
            out = await memory_command(self.services.memory, args)
            self._confirm = out.confirm
        else:
            out, names = await mcp_command(self.services.mcp, args, self.note)
            self.mcp_names = names or self.mcp_names
        self._show(out)

    def _show(self, out: Output) -> None:
        for text, style in out.lines:
            self._print(literal(text, style))

    async def _loop_command(self, name: str, args: str) -> None:
        try:
            response = await self.client.run_command(self.session_id, name, args)
        except ClientError as err:
            if err.reason in ("unimplemented", "unknown_command", "not_implemented"):
                self._print(literal(f"/{name} is not available in this version", "dim"))
                return
            raise
        if _data_error(response.data_json) == "unknown_command":
            self._print(literal(f"/{name} is not available in this version", "dim"))
            return
        self._print(literal(response.text.rstrip("\n") or f"/{name}: done"))

    # ---- /resume ----

    async def _refresh_rows(self) -> list[resume.SessionRow]:
        summaries = await self.client.list_sessions(self.workspace)
        self.session_rows = [resume.SessionRow(s.session_id, s.last_activity, s.preview, s.message_count, s.open)
                             for s in summaries]
        return self.session_rows

    async def _refresh_rows_quietly(self) -> None:
        with contextlib.suppress(ClientError):
            await self._refresh_rows()

    async def _resume(self, args: str) -> None:
        rows = [r for r in await self._refresh_rows() if r.session_id != self.session_id]
        if args:
            match, candidates = resume.match_prefix(rows, args)
            if match is not None:
                await self._resume_id(match.session_id)
            elif candidates:
                self._print(literal(f"/resume {args} is ambiguous; candidates:", "yellow"))
                self._show_rows(candidates)
            else:
                self._print(literal(f"no saved session starts with {args!r}", "yellow"))
            return
        groups = resume.group_sessions(rows, dt.date.today())
        if not groups:
            self._print(literal("no saved sessions", "dim"))
            return
        self._picker = [row for _, group in groups for row in group]
        self._show_groups(groups)
        self._print(literal("type a number, an id prefix or words to filter; Enter alone cancels", "dim"))

    async def _pick(self, line: str) -> None:
        result = resume.pick(self._picker or [], line)
        self._picker = result.rows
        if result.message:
            self._print(literal(result.message, "yellow" if result.rows else "dim"))
        if result.resume_id:
            await self._resume_id(result.resume_id)
        elif result.rows and not result.message:
            self._show_groups(resume.group_sessions(result.rows, dt.date.today()))

    def _busy(self) -> bool:
        """True (and says so) while a turn runs: switching sessions then would orphan its stream."""
        if self.turn_running:
            self._print(literal("a turn is running: wait for it or press Ctrl-C first", "yellow"))
        return self.turn_running

    async def _resume_id(self, session_id: str) -> None:
        if self._busy():
            return
        await self._switch_to(await self.client.open_session(self.workspace, session_id), redraw=True)

    def _show_groups(self, groups: list[tuple[str, list[resume.SessionRow]]]) -> None:
        for text, style in resume.group_lines(groups):
            self._print(literal(text, style))

    def _show_rows(self, rows: list[resume.SessionRow]) -> None:
        for row in rows:
            self._print(literal(f"  {resume.row_line(row)}"))

    def _redraw(self, items: list[resume.HistoryItem], plan: list[tuple[str, str]] | None = None) -> None:
        for text, style in resume.history_lines(items, plan):
            self._print(literal(text, style))

    # ---- streams ----

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        err = task.exception()
        assert err is not None
        self._report_crash(err)

    def _report_crash(self, err: BaseException) -> None:
        if self.log_path is not None:
            log_crash(self.log_path, err)
        where = f" (details in {self.log_path})" if self.log_path else ""
        self._error(f"{type(err).__name__}: {err}{where}")
        self.turn_running = False
        self._invalidate()

    async def _can_resend(self, err: ClientError, deadline: float) -> bool:
        """Whether a Start that failed with ``err`` before any event may be sent again now."""
        if time.monotonic() >= deadline:
            return False
        if err.reason == "service_unavailable":
            await asyncio.sleep(0.3)
            return await self._restore()
        return err.reason == "session_not_found" and await self._reopen()

    async def _restore(self) -> bool:
        """Start the services again when they are down (as `run` does); False when that failed (said)."""
        problem = await self.restorer.restore(self.note)
        if problem:
            self._error(problem)
        return not problem

    async def _reopen(self) -> bool:
        """Open the current session again (a restarted loop service forgot it); False if that fails."""
        try:
            await self.client.open_session(self.workspace, self.session_id)
        except ClientError as err:
            self._error(str(err))
            return False
        self.note("the loop service restarted; session re-opened")
        return True

    def _control_stream(self) -> TurnStream | None:
        """Where approvals, answers, interrupts and queued input go."""
        if self._turn_stream is not None and not self._turn_stream.closed:
            return self._turn_stream
        return self._follower

    def _driver(self, plan: bool = False) -> TurnDriver:
        """The driver of one turn of this session: events go to ``_deliver``; it ends once the turn and
        every input queued behind it have finished; control messages go to its stream.

        When the Start never reached a loop (the service is restarting: UNAVAILABLE before any event)
        it is sent again for up to ``START_RETRY_SECONDS``; when a restarted loop no longer has the
        session open, the session is re-opened and the input sent once more. Nothing typed is lost.
        """
        deadline: float | None = None

        async def resend(err: ClientError) -> bool:
            nonlocal deadline
            deadline = deadline or time.monotonic() + START_RETRY_SECONDS
            return await self._can_resend(err, deadline)

        def use(stream: TurnStream) -> None:
            self._turn_stream = stream

        return TurnDriver(self.client, self.session_id, self._deliver,
                          until=lambda event: isinstance(event.body, views.TurnFinished) and not self.queued,
                          resend=resend, on_stream=use, plan=plan)

    async def _follow_turn(self, driver: TurnDriver, stream: TurnStream, text: str = "",
                           files: Sequence[attachments.Attachment] = ()) -> None:
        """Follow a turn to its end (``text`` and ``files``: the input that started it, for a resend)."""
        end = await driver.follow(stream, text, files)
        if self._turn_stream is driver.stream:
            self._turn_stream = None
        if lost_turn(end) and text:
            self.turn_running = False  # the loop died mid-turn: bring it back and offer the prompt again
            if await self._restore() and not self.prompt.default_buffer.text:
                self.prompt.default_buffer.text = text
                self.note(OFFERED)
        elif end.error is not None:
            self._error(str(end.error))
            self.turn_running = False
            self.queued.clear()
        if self.queued:
            await self._pick_up_queue()
        self._invalidate()

    async def _pick_up_queue(self) -> None:
        """The stream ended with input still queued: follow the loop running it, or start it ourselves."""
        before = self.last_seq
        follower = self.client.attach(self.session_id, self.last_seq)
        self._turn_stream = follower
        try:
            async with asyncio.timeout(3.0):
                async for event in follower.events():
                    self._deliver(event)
                    if self.last_seq > before:
                        break
        except (TimeoutError, ClientError):
            pass
        if self.last_seq > before:
            await self._follow_turn(self._driver(), follower)
            return
        follower.close()
        self.turn_running = False
        text = self.queued.pop(0)
        self._send_input(text)

    def _follow_session(self, after_seq: int, replay_in_flight: bool) -> None:
        """Follow every event of the session, whoever started the turn (this client or another).

        ``replay_in_flight`` (attach): first show the turn that is running, from its start.
        The loop ends a follow stream once the session is idle, so the follower re-attaches
        from its last event number until the REPL exits or switches sessions.
        """
        if self._follower_task is not None:
            self._follower_task.cancel()
        session_id = self.session_id
        replaying = replay_in_flight and after_seq > 0
        self.last_seq = 0 if replaying else after_seq
        backlog: list[views.Event] = []

        def end_replay() -> None:
            nonlocal replaying
            replaying = False
            for old in _turn_in_flight(backlog):
                self._deliver(old)
            self.last_seq = max(self.last_seq, after_seq)
            backlog.clear()

        async def follow() -> None:
            failing = False
            delay = FOLLOW_POLL_SECONDS
            while True:
                stream = self.client.attach(session_id, self.last_seq)
                self._follower = stream
                delay = min(FOLLOW_POLL_MAX_SECONDS, delay * 1.5)
                try:
                    async for event in stream.events():
                        failing = False
                        delay = FOLLOW_POLL_SECONDS
                        if not replaying:
                            self._deliver(event)
                            continue
                        backlog.append(event)
                        if event.seq >= after_seq:
                            end_replay()
                except ClientError as err:
                    if err.reason == "session_not_found" and await self._reopen():
                        continue
                    restored = err.reason == "service_unavailable" and await self._restore()
                    if not failing and not restored:
                        self._error(f"{err} (retrying)")
                    failing = not restored
                finally:
                    stream.close()
                if replaying:
                    end_replay()
                await asyncio.sleep(FOLLOW_POLL_MAX_SECONDS if failing else delay)

        self._follower_task = asyncio.ensure_future(follow())
        self._tasks.add(self._follower_task)
        self._follower_task.add_done_callback(self._task_done)

    async def _watch_background(self, session_id: str, after_seq: int, pending: set[str]) -> None:
        """The session the user left still has background children: show each one's end as it comes,
        labelled with that session (until none is left)."""
        last = after_seq
        while pending:
            stream = self.client.attach(session_id, last)
            try:
                async for event in stream.events():
                    last = max(last, event.seq)
                    body = event.body
                    if isinstance(body, views.BackgroundTaskDone) and body.run_id in pending:
                        pending.discard(body.run_id)
                        self._print(literal(background_done_line(body, origin=session_id), "dim"))
            except ClientError:
                pass
            finally:
                stream.close()
            if pending:
                await asyncio.sleep(FOLLOW_POLL_MAX_SECONDS)

    def _deliver(self, event: views.Event) -> None:
        if event.seq and event.seq <= self.last_seq:
            return
        self.last_seq = max(self.last_seq, event.seq)
        body = event.body
        if isinstance(body, views.TurnStarted):
            self.turn_running = True
            if self.queued and self.queued[0] == body.input:
                self.queued.pop(0)
            if not self._echoed_input:
                self._print(literal(f"› {body.input}", "bold"))
            self._echoed_input = False
        elif isinstance(body, views.TurnFinished):
            self.turn_running = bool(self.queued)
        elif isinstance(body, views.SubagentStarted) and body.background:
            self._background.add(body.run_id)
        elif isinstance(body, views.BackgroundTaskDone):
            self._background.discard(body.run_id)
        elif isinstance(body, views.InputQueued) and body.input in self._shown_queued:
            self._shown_queued.remove(body.input)
            return
        if isinstance(body, views.TextDelta):
            self._timings.mark("event")
        self._sync_width()
        self.renderer.handle(event)
        self.progress.feed(event, time.monotonic())
        if not self._ticking and (self.turn_running or self.progress.background):
            self._ticking = True
            self._spawn(self._tick())
        self._invalidate()

    async def _tick(self) -> None:
        try:
            await tick_while(lambda: self.turn_running or bool(self.progress.background), self._invalidate)
        finally:
            self._ticking = False

    # ---- answers, interrupts, keys ----

    def answer_approval(self, decision: views.Decision) -> None:
        """Send ``decision`` for the pending approval (once; later keys find nothing pending)."""
        pending = self.renderer.pending_approval
        stream = self._control_stream()
        if pending is None or stream is None:
            return
        self.renderer.pending_approval = None
        stream.approve(pending.request_id, decision)
        self._invalidate()

    def answer_question(self, answer: str) -> None:
        """Send ``answer`` to the pending ask_user question."""
        pending = self.renderer.pending_question
        stream = self._control_stream()
        if pending is None or stream is None:
            return
        self.renderer.pending_question = None
        stream.answer(pending.request_id, answer)
        self._invalidate()

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

    def interrupt(self, scope: views.Scope, note: str) -> None:
        """Ask the loop to cancel the tool batch or the turn, and say so."""
        stream = self._control_stream()
        if stream is None:
            return
        stream.interrupt(scope)
        self.note(note)

    # ---- output ----

    def _message(self) -> FormattedText:
        parts: list[tuple[str, str]] = []
        partial = self.renderer.partial_text
        if partial:
            self._timings.drawn()
            parts.append(("", visible_controls(partial[-_PARTIAL_SHOWN:]) + "\n"))
        if self.renderer.pending_approval is not None:
            parts.append(("fg:ansimagenta bold", f"approve? {APPROVAL_CHOICES} "))
        elif self.renderer.pending_question is not None:
            parts.append(("fg:ansicyan bold", "answer› "))
        elif self._picker is not None:
            parts.append(("bold", "resume› "))
        elif self._confirm is not None:
            parts.append(("fg:ansiyellow bold", "forget? [y/N] "))
        elif self._asking_plan:
            parts.append(("bold", "plan› "))
        else:
            status = self.progress.line(time.monotonic())  # a running turn's, or background children's
            if status:
                parts.append(("fg:ansibrightblack", f"⋯ {status}\n"))
            parts.append(("fg:ansibrightblack", "… ") if self.turn_running else ("bold", "› "))
        return FormattedText(parts)

    def _invalidate(self) -> None:
        app = self.prompt.app
        if app.is_running:
            app.invalidate()

    def _sync_width(self) -> None:
        self.console.width = terminal_width()

    def submit_line(self, line: str) -> None:
        """Hand a line typed at the prompt to the REPL (Enter's binding calls this)."""
        self._timings.reset(line)
        self._timings.mark("key")
        self._lines.put_nowait(line)

    def _echo(self, line: str) -> None:
        self._print(literal(f"› {line}", "bold"))

    def _print(self, text: Text) -> None:
        self.renderer.print(text)

    def note(self, text: str) -> None:
        """A dim one-line note from the client itself (cut, never wrapped)."""
        self.renderer.print(literal(f"  {text}", "dim"), wrap=False)

    def _error(self, text: str) -> None:
        self.renderer.print(literal(f"error: {text}", "red"))


def _data_error(data_json: str) -> str:
    """The ``error`` field of a command's JSON answer ("" when none or not JSON)."""
    try:
        data = json.loads(data_json or "{}")
    except json.JSONDecodeError:
        return ""
    return str(data.get("error", "")) if isinstance(data, dict) else ""


def _turn_in_flight(backlog: list[views.Event]) -> list[views.Event]:
    """The replayed events of the last turn if it has not finished yet, else nothing."""
    start = None
    for index, event in enumerate(backlog):
        if isinstance(event.body, views.TurnStarted):
            start = index
        elif isinstance(event.body, views.TurnFinished):
            start = None
    return backlog[start:] if start is not None else []


