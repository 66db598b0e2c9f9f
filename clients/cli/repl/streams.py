"""The REPL's streams: starting a turn (or queueing input behind one), following it to its end, following
the whole session between turns, and delivering each event once to the renderer and the status line.

Every event from every stream goes through :meth:`TurnStreams.deliver`, which drops duplicates by
sequence number, so a session followed by an attach stream and a turn stream at once renders each
event exactly once. A stream the loop dropped (the services restarting) is started again; input
that never reached a loop is sent again or put back on the input line.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from clients.cli import attachments, views
from clients.cli.connection.loop import ClientError, TurnStream
from clients.cli.driver import TurnDriver
from clients.cli.progress import tick_while
from clients.cli.render import background_done_line
from clients.cli.repl.host import ReplHost
from clients.cli.repl.recovery import OFFERED, lost_turn
from clients.cli.textsafe import literal

# How often an attached client re-opens its follow stream once the session went idle.
FOLLOW_POLL_SECONDS = 0.3
# ... backing off to this while nothing happens (a turn another client starts shows within it).
FOLLOW_POLL_MAX_SECONDS = 1.0
# How long a turn's Start is retried while the loop service is restarting: the supervisor's
# restart measured 1-4 s here, but a loaded machine (a whole test suite running) stretches the
# loop's start, and giving up loses nothing but makes the user type the input again.
START_RETRY_SECONDS = 30.0


class TurnStreams:
    """The streams of one REPL's session."""

    def __init__(self, repl: ReplHost) -> None:
        self.repl = repl
        self.background: set[str] = set()
        """Background subagent runs of this session still running (their end is shown even after a switch)."""
        self._follower: TurnStream | None = None
        self._follower_task: asyncio.Task[None] | None = None
        self._turn_stream: TurnStream | None = None
        self._shown_queued: list[str] = []
        self._echoed_input = False
        """True while the next TurnStarted is for a line the prompt already shows."""
        self._ticking = False

    def leave_session(self, new_session_id: str) -> None:
        """The REPL switches to ``new_session_id``: the old session's background children keep being
        watched (their ends shown, labelled), this one starts with none."""
        repl = self.repl
        if self.background and repl.session_id and new_session_id != repl.session_id:
            repl.spawn(self._watch_background(repl.session_id, repl.last_seq, set(self.background)))
        self.background = set()

    def close(self) -> None:
        """Close the turn's and the follower's streams (the REPL exits)."""
        for stream in (self._turn_stream, self._follower):
            if stream is not None:
                stream.close()

    def send_input(self, text: str, extra: Sequence[attachments.Attachment] = ()) -> None:
        """Start a turn with ``text`` (and the files it names), or queue it behind the running one."""
        if self.repl.turn_running:
            stream = self.control_stream()
            self.repl.queued.append(text)
            self._shown_queued.append(text)
            if stream is not None:
                stream.queue(text)
            self.repl.print(literal(f"  queued #{len(self.repl.queued)}: {text.strip()[:60]}", "dim"))
            return
        try:
            files = [*attachments.collect(text, Path(os.getcwd()), Path(self.repl.workspace)), *extra]  # as `run`
        except attachments.AttachmentError as err:
            self.repl.print(literal(f"  {err}", "red"))
            return
        self.repl.turn_running = True
        self._echoed_input = True
        driver = self._driver()
        stream = driver.start(text, files)
        self.repl.timings.mark("send")
        self.repl.spawn(self._follow_turn(driver, stream, text, files))
        self.repl.echo(text)  # after the start: the turn should not wait for the echo's redraw
        for item in files:
            self.repl.print(literal(f"  attached {item.path} ({len(item.data):,} bytes)", "dim"))

    def send_plan(self, topic: str) -> None:
        """Plan ``topic`` and run the plan's steps as one turn."""
        self.repl.turn_running = True
        driver = self._driver(plan=True)
        stream = driver.start(topic)
        self.repl.spawn(self._follow_turn(driver, stream, topic))

    async def _can_resend(self, err: ClientError, deadline: float) -> bool:
        """Whether a Start that failed with ``err`` before any event may be sent again now."""
        if time.monotonic() >= deadline:
            return False
        if err.reason == "service_unavailable":
            await asyncio.sleep(0.3)
            return await self.restore()
        return err.reason == "session_not_found" and await self._reopen()

    async def restore(self) -> bool:
        """Start the services again when they are down (as `run` does); False when that failed (said)."""
        problem = await self.repl.restorer.restore(self.repl.note)
        if problem:
            self.repl.error(problem)
        return not problem

    async def _reopen(self) -> bool:
        """Open the current session again (a restarted loop service forgot it); False if that fails.

        A session nothing was said in yet was never written, so a restarted loop has nothing to open
        again: the REPL moves to a new session then (nothing is lost; the id changes)."""
        try:
            await self.repl.client.open_session(self.repl.workspace, self.repl.session_id)
        except ClientError as err:
            if err.reason != "session_not_found":
                self.repl.error(str(err))
                return False
            try:
                opened = await self.repl.client.open_session(self.repl.workspace, "")
            except ClientError as again:
                self.repl.error(str(again))
                return False
            await self.repl.switch_to(opened, redraw=False)
            self.repl.note("the loop service restarted before this session's first message: "
                           "continuing in a new session")
            return True
        self.repl.note("the loop service restarted; session re-opened")
        return True

    def control_stream(self) -> TurnStream | None:
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
            again = await self._can_resend(err, deadline)
            driver.session_id = self.repl.session_id  # a re-open may have moved the REPL to a new session
            return again

        def use(stream: TurnStream) -> None:
            self._turn_stream = stream

        driver = TurnDriver(self.repl.client, self.repl.session_id, self.deliver,
                            until=lambda event: isinstance(event.body, views.TurnFinished) and not self.repl.queued,
                            resend=resend, on_stream=use, plan=plan)
        return driver

    async def _follow_turn(self, driver: TurnDriver, stream: TurnStream, text: str = "",
                           files: Sequence[attachments.Attachment] = ()) -> None:
        """Follow a turn to its end (``text`` and ``files``: the input that started it, for a resend)."""
        end = await driver.follow(stream, text, files)
        if self._turn_stream is driver.stream:
            self._turn_stream = None
        if lost_turn(end) and text:
            self.repl.turn_running = False  # the loop died mid-turn: bring it back and offer the prompt again
            if await self.restore() and not self.repl.prompt.default_buffer.text:
                self.repl.prompt.default_buffer.text = text
                self.repl.note(OFFERED)
        elif end.error is not None:
            self.repl.error(str(end.error))
            self.repl.turn_running = False
            self.repl.queued.clear()
        if self.repl.queued:
            await self._pick_up_queue()
        self.repl.invalidate()

    async def _pick_up_queue(self) -> None:
        """The stream ended with input still queued: follow the loop running it, or start it ourselves."""
        before = self.repl.last_seq
        follower = self.repl.client.attach(self.repl.session_id, self.repl.last_seq)
        self._turn_stream = follower
        try:
            async with asyncio.timeout(3.0):
                async for event in follower.events():
                    self.deliver(event)
                    if self.repl.last_seq > before:
                        break
        except (TimeoutError, ClientError):
            pass
        if self.repl.last_seq > before:
            await self._follow_turn(self._driver(), follower)
            return
        follower.close()
        self.repl.turn_running = False
        text = self.repl.queued.pop(0)
        self.send_input(text)

    def follow_session(self, after_seq: int, replay_in_flight: bool) -> None:
        """Follow every event of the session, whoever started the turn (this client or another).

        ``replay_in_flight`` (attach): first show the turn that is running, from its start.
        The loop ends a follow stream once the session is idle, so the follower re-attaches
        from its last event number until the REPL exits or switches sessions.
        """
        if self._follower_task is not None:
            self._follower_task.cancel()
        session_id = self.repl.session_id
        replaying = replay_in_flight and after_seq > 0
        self.repl.last_seq = 0 if replaying else after_seq
        backlog: list[views.Event] = []

        def end_replay() -> None:
            nonlocal replaying
            replaying = False
            for old in _turn_in_flight(backlog):
                self.deliver(old)
            self.repl.last_seq = max(self.repl.last_seq, after_seq)
            backlog.clear()

        async def follow() -> None:
            failing = False
            delay = FOLLOW_POLL_SECONDS
            while True:
                stream = self.repl.client.attach(session_id, self.repl.last_seq)
                self._follower = stream
                delay = min(FOLLOW_POLL_MAX_SECONDS, delay * 1.5)
                try:
                    async for event in stream.events():
                        failing = False
                        delay = FOLLOW_POLL_SECONDS
                        if not replaying:
                            self.deliver(event)
                            continue
                        backlog.append(event)
                        if event.seq >= after_seq:
                            end_replay()
                except ClientError as err:
                    if err.reason == "session_not_found" and await self._reopen():
                        continue
                    restored = err.reason == "service_unavailable" and await self.restore()
                    if not failing and not restored:
                        self.repl.error(f"{err} (retrying)")
                    failing = not restored
                finally:
                    stream.close()
                if replaying:
                    end_replay()
                await asyncio.sleep(FOLLOW_POLL_MAX_SECONDS if failing else delay)

        self._follower_task = self.repl.spawn(follow())

    async def _watch_background(self, session_id: str, after_seq: int, pending: set[str]) -> None:
        """The session the user left still has background children: show each one's end as it comes,
        labelled with that session (until none is left)."""
        last = after_seq
        while pending:
            stream = self.repl.client.attach(session_id, last)
            try:
                async for event in stream.events():
                    last = max(last, event.seq)
                    body = event.body
                    if isinstance(body, views.BackgroundTaskDone) and body.run_id in pending:
                        pending.discard(body.run_id)
                        self.repl.print(literal(background_done_line(body, origin=session_id), "dim"))
            except ClientError:
                pass
            finally:
                stream.close()
            if pending:
                await asyncio.sleep(FOLLOW_POLL_MAX_SECONDS)

    def deliver(self, event: views.Event) -> None:
        """Show one event of any stream once (duplicates dropped by sequence number)."""
        if event.seq and event.seq <= self.repl.last_seq:
            return
        self.repl.last_seq = max(self.repl.last_seq, event.seq)
        body = event.body
        if isinstance(body, views.TurnStarted):
            self.repl.turn_running = True
            if self.repl.queued and self.repl.queued[0] == body.input:
                self.repl.queued.pop(0)
            if not self._echoed_input:
                self.repl.print(literal(f"› {body.input}", "bold"))
            self._echoed_input = False
        elif isinstance(body, views.TurnFinished):
            self.repl.turn_running = bool(self.repl.queued)
        elif isinstance(body, views.SubagentStarted) and body.background:
            self.background.add(body.run_id)
        elif isinstance(body, views.ToolFinished) and (run_id := background_run(body.result)):
            # The subAgent call's own result names the run: the child's SubagentStarted may come
            # after the parent's turn ended (it first makes the child's worktree), and a user who
            # moves on at once must still be shown the child's end.
            self.background.add(run_id)
        elif isinstance(body, views.BackgroundTaskDone):
            self.background.discard(body.run_id)
        elif isinstance(body, views.InputQueued) and body.input in self._shown_queued:
            self._shown_queued.remove(body.input)
            return
        if isinstance(body, views.TextDelta):
            self.repl.timings.mark("event")
        self.repl.sync_width()
        self.repl.renderer.handle(event)
        self.repl.progress.feed(event, time.monotonic())
        if self.repl.progress.jobs:
            self.repl.watch_jobs()
        self.keep_ticking()
        self.repl.invalidate()

    def keep_ticking(self) -> None:
        """Redraw the status line every second while a turn or something in the background runs."""
        if not self._ticking and (self.repl.turn_running or self.repl.progress.in_background):
            self._ticking = True
            self.repl.spawn(self._tick())

    async def _tick(self) -> None:
        try:
            await tick_while(lambda: self.repl.turn_running or self.repl.progress.in_background, self.repl.invalidate)
        finally:
            self._ticking = False



def _turn_in_flight(backlog: list[views.Event]) -> list[views.Event]:
    """The replayed events of the last turn if it has not finished yet, else nothing."""
    start = None
    for index, event in enumerate(backlog):
        if isinstance(event.body, views.TurnStarted):
            start = index
        elif isinstance(event.body, views.TurnFinished):
            start = None
    return backlog[start:] if start is not None else []


def background_run(result: views.ToolResult) -> str:
    """The run id a ``subAgent`` call that started a background child returned ("" for any other result)."""
    if result.tool != "subAgent" or not result.ok or not result.data_json:
        return ""
    try:
        data = json.loads(result.data_json)
    except ValueError:
        return ""
    run_id = data.get("run_id") if isinstance(data, dict) and data.get("background") is True else None
    return run_id if isinstance(run_id, str) else ""
