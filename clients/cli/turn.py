"""One non-interactive turn (``ai-coding run`` and the demo), on the client's one turn driver.

``drive_turn`` opens the loop's stream, hands every event to a sink (the rich renderer or
the JSON printer), answers approval requests through an :class:`Approver`, and turns the
end of the stream into an exit code. A Ctrl-C sends ``Interrupt{turn}`` and waits for the
turn's final event; a second Ctrl-C gives up on the stream. SIGTERM/SIGHUP and
``--timeout`` interrupt the turn the same way before the client exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, Protocol

from clients.cli import connection, exit_codes, session_views, views
from clients.cli.approvals import CHOICES, approval_decision
from clients.cli.attachments import Attachment
from clients.cli.driver import TurnDriver, TurnEnd
from services.kernel.endpoints import Endpoint
from services.kernel.errors import ServiceUnavailable
from services.kernel.records import mutable_record, record

Sink = Callable[[views.Event], None]
# How often the client looks at Ctrl-C, signals and its --timeout while a turn runs.
_TICK_SECONDS = 0.1


def _never() -> bool:
    return False


class Approver(Protocol):
    """Decides one approval request (the loop already applied the permission table)."""

    def decide(self, request: views.ApprovalRequested,
               answered_elsewhere: Callable[[], bool] = _never) -> views.Decision | None:
        """How to answer ``request``; None when ``answered_elsewhere()`` turned true first (another
        client attached to the session answered it, the turn ended, or Ctrl-C stopped it)."""
        ...


NEVER_AUTO_APPROVED = frozenset({"webfetch"})
"""Tools ``--auto-approve`` does not approve: they connect on the model's say (a terminal asks;
without one, only the hosts of the user's ``net.webfetch_allow_domains`` are fetched)."""


class AutoApprover:
    """``--auto-approve``: every WARN-level call is allowed once (DENY stays denied by the loop),
    except :data:`NEVER_AUTO_APPROVED`, which a terminal asks about and no terminal refuses."""

    def decide(self, request: views.ApprovalRequested,
               answered_elsewhere: Callable[[], bool] = _never) -> views.Decision | None:
        if request.tool in NEVER_AUTO_APPROVED:
            if sys.stdin.isatty():
                return TtyApprover().decide(request, answered_elsewhere)
            print(f"ai-coding run: refused `{request.tool}`: --auto-approve does not approve it and there is no "
                  "terminal to ask; list the host in `net: {webfetch_allow_domains: [...]}` in your user config",
                  file=sys.stderr)
            return views.Decision.DENY
        return views.Decision.ALLOW_ONCE


class NoTtyApprover:
    """No terminal and no flag: refuse, and say which flag would have allowed it."""

    def decide(self, request: views.ApprovalRequested,
               answered_elsewhere: Callable[[], bool] = _never) -> views.Decision | None:
        print(f"ai-coding run: refused `{request.tool}`: it needs approval and there is no terminal to ask; "
              "pass --auto-approve to allow such tools without a prompt", file=sys.stderr)
        return views.Decision.DENY


class TtyApprover:
    """Ask on the terminal: y once, a always (this session), n deny, s stop; Enter alone denies."""

    def decide(self, request: views.ApprovalRequested,
               answered_elsewhere: Callable[[], bool] = _never) -> views.Decision | None:
        # Not input(): it blocks until a line comes, and a `run` kept waiting at its prompt after
        # `ai-coding attach` had answered from another terminal. The line is read once it is complete.
        sys.stdout.write(f"allow {request.tool}? {CHOICES} ")
        sys.stdout.flush()
        while not select.select([sys.stdin], [], [], _TICK_SECONDS)[0]:
            if answered_elsewhere():
                return None
        return approval_decision(sys.stdin.readline())  # "" at end of input: deny


def tty_answer(question: views.QuestionAsked, answered_elsewhere: Callable[[], bool] = _never) -> str | None:
    """Read the answer to a question on the terminal (the renderer printed it and its options): a
    number picks that option, anything else is the answer; None when it was answered elsewhere."""
    sys.stdout.write("answer› ")
    sys.stdout.flush()
    while not select.select([sys.stdin], [], [], _TICK_SECONDS)[0]:
        if answered_elsewhere():
            return None
    text = sys.stdin.readline().strip()
    if text.isdigit() and 1 <= int(text) <= len(question.options):
        return question.options[int(text) - 1]
    return text


class _Prompt:
    """One approval or question being asked on its own thread (a terminal read blocks; the turn's
    stream must keep flowing meanwhile, so an answer from another client or the turn's end is seen)."""

    def __init__(self, request: views.ApprovalRequested | views.QuestionAsked,
                 ask: Callable[[Callable[[], bool]], object], done: Callable[[_Prompt, object], None]) -> None:
        self.request = request
        self.given_way = threading.Event()
        self.stopped = False
        """Ctrl-C or a signal came while it asked: the answer is "stop"."""
        self.elsewhere = False
        """Another client answered it (already said, in stream order)."""
        loop = asyncio.get_running_loop()

        def run() -> None:
            answer = ask(self.given_way.is_set)
            with contextlib.suppress(RuntimeError):  # the loop already closed: the turn is over
                loop.call_soon_threadsafe(done, self, answer)

        self.thread = threading.Thread(target=run, name="approval-prompt", daemon=True)
        self.thread.start()

    def give_way(self, stopped: bool = False) -> None:
        self.stopped = self.stopped or stopped
        self.given_way.set()


@mutable_record
class TurnOutcome:
    """How the turn ended."""

    exit_code: int
    status: str
    """TurnStatus name, or a client-side reason such as ``stream_lost``."""
    session_id: str
    finished: views.TurnFinished | None = None


def loop_serving(endpoint: Endpoint) -> bool:
    """Whether the loop at ``endpoint`` answers SERVING, asked on the channel this process's turn then
    uses (``control.ensure_running(..., serving=loop_serving)``: one connection for the whole run)."""
    from clients.cli.connection.loop import LoopClient

    async def call() -> bool:
        client = LoopClient(endpoint)
        try:
            return await client.serving()
        finally:
            await client.close()

    return connection.run(call())


def open_session(endpoint: Endpoint, workspace: str, *, session_id: str = "", model: str = "",
                 auto_approve: bool = False, cwd: str = "", interactive: bool = False) -> session_views.OpenedSession:
    """``OpenSession`` for one turn, on the loop just found healthy (``interactive``: a person at a
    terminal answers questions: ask_user and MCP servers' elicitations)."""
    from clients.cli.connection.loop import ClientError, LoopClient

    async def call() -> session_views.OpenedSession:
        client = LoopClient(endpoint, cwd=cwd)
        try:
            return await client.open_session(workspace, session_id, model=model, auto_approve=auto_approve,
                                              interactive=interactive)
        finally:
            await client.close()

    try:
        return connection.run(call())
    except ClientError as err:
        raise _open_failure(endpoint, err) from None


def _open_failure(endpoint: Endpoint, err: Exception) -> Exception:
    """What a failed OpenSession raises: the loop's own words, or that it is not answering."""
    from clients.cli.connection.loop import ClientError

    assert isinstance(err, ClientError)
    if err.reason != "service_unavailable":
        return ClientError(err.detail or err.message, reason=err.reason)
    return ServiceUnavailable(f"the loop service at {endpoint} is not answering", hint="Start it with `ai-coding up`.")


class EarlyOpen:
    """``OpenSession`` sent together with the health check that decides whether the loop serves
    (``control.ensure_running(..., serving=early.serving)``): both on the channel the turn then uses,
    one round trip where there were two. The session it opened is :meth:`take`-n only when the check
    said SERVING; otherwise it is dropped (a session nothing was said in lives only in the loop's
    memory) and the run goes on as before: the services are waited for or started, then
    :func:`open_session`."""

    def __init__(self, endpoint: Endpoint, workspace: str, *, session_id: str = "", model: str = "",
                 auto_approve: bool = False, cwd: str = "", interactive: bool = False) -> None:
        self.endpoint = endpoint
        self.workspace, self.session_id, self.model = workspace, session_id, model
        self.auto_approve, self.cwd, self.interactive = auto_approve, cwd, interactive
        self.answer: session_views.OpenedSession | Exception | None = None
        """The OpenSession's answer (its ClientError when it failed), once the loop said SERVING."""

    def serving(self, name: str) -> bool:
        """Whether the loop serves; when it does, :attr:`answer` holds what OpenSession answered."""
        from clients.cli.connection.loop import ClientError, LoopClient

        async def call() -> bool:
            client = LoopClient(self.endpoint, cwd=self.cwd)
            opening = asyncio.ensure_future(client.open_session(
                self.workspace, self.session_id, model=self.model, auto_approve=self.auto_approve,
                interactive=self.interactive))
            try:
                if not await client.serving():  # the channel is dropped: the call on it ends too
                    opening.cancel()
                    with contextlib.suppress(ClientError, asyncio.CancelledError):
                        await opening
                    return False
                try:
                    self.answer = await opening
                except ClientError as err:
                    self.answer = err
                return True
            finally:
                if not opening.done():
                    opening.cancel()
                await client.close()

        return connection.run(call())

    def take(self) -> session_views.OpenedSession | None:
        """The session opened with the check that said SERVING (raises what :func:`open_session` raises
        when that OpenSession failed); None when the check did not say SERVING."""
        if isinstance(self.answer, Exception):
            raise _open_failure(self.endpoint, self.answer) from None
        return self.answer


# After the client sent Interrupt (timeout, SIGTERM), how long it waits for the turn's final event.
STOP_GRACE_SECONDS = 5.0


@record
class StopReason:
    """Why the client interrupts its own turn before it ends, and how it exits then."""

    exit_code: int
    status: str
    message: str


def stop_reason(now: float, deadline: float | None, signum: int | None, timeout: float | None) -> StopReason | None:
    """Whether the client must interrupt its turn now: a SIGTERM/SIGHUP came, or ``--timeout`` ran out."""
    if signum is not None:
        name = signal.Signals(signum).name
        return StopReason(exit_codes.for_signal(signum), f"client_{name.lower()}",
                          f"got {name}; interrupting the turn before exiting")
    if deadline is not None and now >= deadline:
        return StopReason(exit_codes.TIMEOUT, "client_timeout",
                          f"the turn did not finish within --timeout ({timeout:g} s); interrupting it")
    return None


def drive_turn(
    endpoint: Endpoint, session_id: str, prompt: str, sink: Sink, approver: Approver, timeout: float | None = None,
    attachments: Sequence[Attachment] = (), plan: bool = False,
) -> TurnOutcome:
    """Run one turn to its end; returns the outcome with the exit code to use.

    The loop keeps a turn running when its client goes away (the REPL re-attaches), so a
    client that gives up on ``timeout`` or on SIGTERM/SIGHUP first sends ``Interrupt{turn}``
    and waits a few seconds for the turn's final event: nothing keeps running behind it.
    """
    with _CtrlC() as ctrl_c:
        return connection.run(_drive(endpoint, session_id, prompt, attachments, sink, approver, timeout, ctrl_c,
                                     plan))


async def _drive(endpoint: Endpoint, session_id: str, prompt: str, attachments: Sequence[Attachment], sink: Sink,
                 approver: Approver, timeout: float | None, ctrl_c: _CtrlC, plan: bool = False) -> TurnOutcome:
    from clients.cli.connection.loop import LoopClient

    client = LoopClient(endpoint)
    stopping: StopReason | None = None
    unsaved: list[str] = []  # why the loop could not save the session, when it said so
    asking: dict[str, _Prompt] = {}

    def answered(prompt: _Prompt, answer: object) -> None:
        asking.pop(prompt.request.request_id, None)
        ctrl_c.handled = ctrl_c.presses  # a Ctrl-C at the prompt answered it: "stop", not an interrupt
        question = isinstance(prompt.request, views.QuestionAsked)
        if prompt.stopped:
            print(file=sys.stdout)
            answer = "" if question else views.Decision.STOP
        elif answer is None and not prompt.elsewhere:
            print("(answered elsewhere)", file=sys.stdout)
        if isinstance(answer, views.Decision):
            driver.answer_approval(prompt.request.request_id, answer)
        elif isinstance(answer, str) and driver.stream is not None:
            driver.stream.answer(prompt.request.request_id, answer)

    def on_event(event: views.Event) -> None:
        sink(event)
        body = event.body
        if isinstance(body, views.Degraded) and body.component == "session_save":
            unsaved.append(body.reason)
        elif isinstance(body, views.ApprovalResolved | views.QuestionResolved) and body.request_id in asking \
                and not asking[body.request_id].elsewhere:
            # Said here, not by the prompt's thread when it notices: that thread may only get to
            # it after the rest of the turn has been printed.
            waiting = asking[body.request_id]
            waiting.elsewhere = True
            print("(answered elsewhere)", file=sys.stdout)
            waiting.give_way()
        elif isinstance(body, views.TurnFinished):
            for prompt in asking.values():
                prompt.give_way()
        elif isinstance(body, views.ApprovalRequested):
            if stopping is not None:
                driver.answer_approval(body.request_id, views.Decision.STOP)
            else:
                request = body
                asking[body.request_id] = _Prompt(body, lambda elsewhere: approver.decide(request, elsewhere),
                                                  answered)
        elif isinstance(body, views.QuestionAsked) and stopping is None:
            question = body
            asking[body.request_id] = _Prompt(body, lambda elsewhere: tty_answer(question, elsewhere), answered)

    driver = TurnDriver(client, session_id, on_event, plan=plan)
    following = asyncio.ensure_future(driver.follow(driver.start(prompt, attachments)))
    deadline = time.monotonic() + timeout if timeout else None
    give_up_at = 0.0
    try:
        while True:
            done, _ = await asyncio.wait({following}, timeout=_TICK_SECONDS)
            if done:
                return _outcome(following.result(), stopping, endpoint, session_id, unsaved[:1])
            if stopping is None:
                stopping = stop_reason(time.monotonic(), deadline, ctrl_c.terminated, timeout)
                if stopping is not None:
                    print(f"ai-coding run: {stopping.message}", file=sys.stderr)
                    give_up_at = time.monotonic() + STOP_GRACE_SECONDS
                    for waiting in asking.values():
                        waiting.give_way(stopped=True)
                    driver.interrupt(views.Scope.TURN)
            elif time.monotonic() >= give_up_at:
                print("ai-coding run: the loop did not confirm the interrupt; "
                      "check the session with `ai-coding sessions`", file=sys.stderr)
                return TurnOutcome(stopping.exit_code, stopping.status, session_id)
            if stopping is None and asking and ctrl_c.presses > ctrl_c.handled:
                for waiting in asking.values():  # Ctrl-C at an approval prompt answers "stop"
                    waiting.give_way(stopped=True)
            elif stopping is None and ctrl_c.presses > ctrl_c.handled:
                ctrl_c.handled = ctrl_c.presses
                if ctrl_c.handled >= 2:
                    return TurnOutcome(exit_codes.INTERRUPTED, "cancelled_by_client", session_id)
                print("\ninterrupting the turn (Ctrl-C again to stop waiting) ...", file=sys.stderr)
                driver.interrupt(views.Scope.TURN)
    finally:
        for waiting in asking.values():
            waiting.give_way()
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        await client.close()
        for waiting in list(asking.values()):
            waiting.thread.join(timeout=1.0)


def _outcome(end: TurnEnd, stopping: StopReason | None, endpoint: Endpoint, session_id: str,
             unsaved: list[str]) -> TurnOutcome:
    """The exit code and status for how the stream ended (a stop the client asked for wins; a turn
    that ran but is not (all) on disk failed)."""
    if stopping is not None:
        return TurnOutcome(stopping.exit_code, stopping.status, session_id, end.finished)
    if end.finished is not None:
        if unsaved:
            print(f"ai-coding run: the session was not saved: {unsaved[0]}", file=sys.stderr)
            return TurnOutcome(exit_codes.FAILED, "session_not_saved", session_id, end.finished)
        name = end.finished.status.value
        return TurnOutcome(exit_codes.for_turn_status(name), name, session_id, end.finished)
    if end.error is None:
        return TurnOutcome(exit_codes.FAILED, "stream_ended", session_id)
    if end.error.reason == "service_unavailable":
        raise ServiceUnavailable(
            f"the loop service at {endpoint} stopped answering during the turn",
            hint="See `ai-coding logs loop`; the session is saved, continue it with --session " + session_id,
        )
    print(f"ai-coding run: the loop refused the turn: {end.error.detail or end.error.message}", file=sys.stderr)
    return TurnOutcome(refused_exit(end.error.status, end.error.reason), end.error.reason, session_id)


def refused_exit(status: str, reason: str) -> int:
    """The exit code of a turn the loop refused before it ran: the caller's input to change (an image
    for a text-only model, an oversized prompt, a plan topic outside the workspace) is bad input."""
    if status == "invalid_argument" or reason in ("plan_outside_workspace", "input_too_large"):
        return exit_codes.USAGE
    return exit_codes.FAILED


class _CtrlC:
    """Counts Ctrl-C presses during a turn instead of raising wherever the main thread happens
    to be (inside rendering or grpc a KeyboardInterrupt would break the call). SIGTERM and SIGHUP
    are recorded the same way (``terminated``) so the turn is interrupted before the client exits."""

    _SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.presses = 0
        self.handled = 0
        """Presses the driver has acted on."""
        self.terminated: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _CtrlC:
        if threading.current_thread() is threading.main_thread():
            for sig in self._SIGNALS:
                self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT:
            self.presses += 1
        elif self.terminated is None:
            self.terminated = signum
