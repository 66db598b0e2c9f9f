"""Drive one turn over the loop's ``ConverseBatched`` stream (used by ``ai-coding run`` and the demo).

The driver sends ``Start``, hands every event to a sink (the rich renderer or the JSON
printer), answers approval requests through an :class:`Approver`, and turns the end of
the stream into an exit code. A Ctrl-C sends ``Interrupt{turn}`` and waits for the
turn's final event; a second Ctrl-C gives up on the stream.
"""

from __future__ import annotations

import collections
import functools
import queue
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, Protocol

import grpc
from ai_coding.v1 import loop_pb2, loop_pb2_grpc

from clients.cli import convert, exit_codes, views
from clients.cli.approvals import CHOICES, approval_decision
from clients.cli.attachments import Attachment
from services.kernel.endpoints import Endpoint
from services.kernel.errors import ServiceUnavailable

Sink = Callable[[views.Event], None]


def _never() -> bool:
    return False


class Approver(Protocol):
    """Decides one approval request (the loop already applied the permission table)."""

    def decide(self, request: views.ApprovalRequested,
               answered_elsewhere: Callable[[], bool] = _never) -> views.Decision | None:
        """How to answer ``request``; None when ``answered_elsewhere()`` turned true first (another
        client attached to the session answered it, or the turn ended): then nothing is sent."""
        ...


class AutoApprover:
    """``--auto-approve``: every WARN-level call is allowed once (DENY stays denied by the loop)."""

    def decide(self, request: views.ApprovalRequested,
               answered_elsewhere: Callable[[], bool] = _never) -> views.Decision | None:
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
        while not select.select([sys.stdin], [], [], 0.1)[0]:
            if answered_elsewhere():
                sys.stdout.write("(answered elsewhere)\n")
                return None
        return approval_decision(sys.stdin.readline())  # "" at end of input: deny


@dataclass
class TurnOutcome:
    """How the turn ended."""

    exit_code: int
    status: str
    """TurnStatus name, or a client-side reason such as ``stream_lost``."""
    session_id: str
    finished: views.TurnFinished | None = None


def open_session(endpoint: Endpoint, workspace: str, *, session_id: str = "", model: str = "",
                 auto_approve: bool = False, cwd: str = "") -> views.OpenedSession:
    """``OpenSession`` for a non-interactive turn, on the loop just found healthy.

    No channel_ready_future: it leaves a connectivity-polling thread that makes closing the
    channel wait ~200 ms."""
    from services.kernel.channels import sync_channel

    request = loop_pb2.OpenSessionLoopRequest(
        workspace=workspace, session_id=session_id, model=model, auto_approve=auto_approve, interactive=False,
        cwd=cwd,
    )
    channel = sync_channel(endpoint)
    try:
        response: loop_pb2.OpenSessionLoopResponse = loop_pb2_grpc.AgentLoopStub(channel).OpenSession(
            request, timeout=30)
    except grpc.RpcError as err:
        if err.code() != grpc.StatusCode.UNAVAILABLE:
            raise
        raise ServiceUnavailable(f"the loop service at {endpoint} is not answering",
                                 hint="Start it with `ai-coding up`.") from None
    finally:
        channel.close()
    return convert.opened(response)


def _requests(outbox: queue.Queue[loop_pb2.ClientMessage | None]) -> Iterator[loop_pb2.ClientMessage]:
    while True:
        msg = outbox.get()
        if msg is None:
            return
        yield msg


# After the client sent Interrupt (timeout, SIGTERM), how long it waits for the turn's final event.
STOP_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
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
    attachments: Sequence[Attachment] = (),
) -> TurnOutcome:
    """Run one turn to its end; returns the outcome with the exit code to use.

    The loop keeps a turn running when its client goes away (the REPL re-attaches), so a
    client that gives up on ``timeout`` or on SIGTERM/SIGHUP first sends ``Interrupt{turn}``
    and waits a few seconds for the turn's final event: nothing keeps running behind it.
    """
    from services.kernel.channels import sync_channel

    outbox: queue.Queue[loop_pb2.ClientMessage | None] = queue.Queue()
    outbox.put(convert.start(session_id, prompt, attachments))
    channel = sync_channel(endpoint)
    stub = loop_pb2_grpc.AgentLoopStub(channel)
    # Batched: every event ready at one moment travels in one message (a token stream is a few
    # messages instead of hundreds); the events and their order are those of Converse.
    # No gRPC deadline: a deadline would cancel the stream and leave the turn running on the loop.
    call = stub.ConverseBatched(_requests(outbox))
    # The stream is read on its own thread and Ctrl-C only counted (see _CtrlC): a KeyboardInterrupt
    # inside grpc's receive leaves a call that cannot be resumed.
    inbox: queue.Queue[views.Event | grpc.RpcError | None] = queue.Queue()
    threading.Thread(target=_read, args=(call, inbox), name="turn-events", daemon=True).start()
    handled = 0
    deadline = time.monotonic() + timeout if timeout else None
    stopping: StopReason | None = None
    unsaved: str | None = None
    pending: collections.deque[views.Event | grpc.RpcError | None] = collections.deque()
    give_up_at = 0.0
    with _CtrlC() as ctrl_c:
        try:
            while True:
                if stopping is None:
                    stopping = stop_reason(time.monotonic(), deadline, ctrl_c.terminated, timeout)
                    if stopping is not None:
                        print(f"ai-coding run: {stopping.message}", file=sys.stderr)
                        give_up_at = time.monotonic() + STOP_GRACE_SECONDS
                        outbox.put(convert.interrupt(views.Scope.TURN))
                elif time.monotonic() >= give_up_at:
                    print("ai-coding run: the loop did not confirm the interrupt; "
                          "check the session with `ai-coding sessions`", file=sys.stderr)
                    return TurnOutcome(stopping.exit_code, stopping.status, session_id)
                if stopping is None and ctrl_c.presses > handled:
                    handled = ctrl_c.presses
                    if handled >= 2:
                        return TurnOutcome(exit_codes.INTERRUPTED, "cancelled_by_client", session_id)
                    print("\ninterrupting the turn (Ctrl-C again to stop waiting) ...", file=sys.stderr)
                    outbox.put(convert.interrupt(views.Scope.TURN))
                try:
                    item = pending.popleft() if pending else inbox.get(timeout=0.1)
                except queue.Empty:
                    continue
                if item is None or isinstance(item, grpc.RpcError):
                    if stopping is not None:
                        return TurnOutcome(stopping.exit_code, stopping.status, session_id)
                    if item is None:
                        return TurnOutcome(exit_codes.FAILED, "stream_ended", session_id)
                    return _rpc_failure(item, endpoint, session_id)
                sink(item)
                body = item.body
                if isinstance(body, views.Degraded) and body.component == "session_save" and unsaved is None:
                    unsaved = body.reason
                if isinstance(body, views.ApprovalRequested):
                    decision: views.Decision | None = views.Decision.STOP
                    if stopping is None:
                        decision = ctrl_c.around_prompt(functools.partial(
                            approver.decide, body, functools.partial(_answered, inbox, pending, body.request_id)))
                        handled = ctrl_c.presses  # a Ctrl-C at the prompt already answered "stop"
                    if decision is not None:
                        outbox.put(convert.approval(body.request_id, decision))
                elif isinstance(body, views.TurnFinished):
                    if stopping is not None:
                        return TurnOutcome(stopping.exit_code, stopping.status, session_id, body)
                    name = body.status.value
                    if unsaved is not None:  # the turn ran, but what it did is not (all) on disk
                        print(f"ai-coding run: the session was not saved: {unsaved}", file=sys.stderr)
                        return TurnOutcome(exit_codes.FAILED, "session_not_saved", session_id, body)
                    return TurnOutcome(exit_codes.for_turn_status(name), name, session_id, body)
        finally:
            outbox.put(None)
            call.cancel()
            channel.close()


def _answered(inbox: queue.Queue[views.Event | grpc.RpcError | None],
              pending: collections.deque[views.Event | grpc.RpcError | None], request_id: str) -> bool:
    """Whether the stream has, meanwhile, resolved approval ``request_id`` (or ended); what was read
    to find out is kept in ``pending``, in order, for the driver to handle next."""
    while True:
        try:
            item = inbox.get_nowait()
        except queue.Empty:
            return False
        pending.append(item)
        if item is None or isinstance(item, grpc.RpcError):
            return True
        body = item.body
        if isinstance(body, views.ApprovalResolved) and body.request_id == request_id:
            return True
        if isinstance(body, views.TurnFinished):
            return True


class _CtrlC:
    """Counts Ctrl-C presses during a turn instead of raising wherever the main thread happens
    to be (inside rendering or grpc a KeyboardInterrupt would break the call); only a prompt
    waiting for the user is interrupted, and that answers "stop". SIGTERM and SIGHUP are
    recorded the same way (``terminated``) so the turn is interrupted before the client exits."""

    _SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.presses = 0
        self.terminated: int | None = None
        self._in_prompt = False
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
        if self._in_prompt:
            raise KeyboardInterrupt

    def around_prompt(self, ask: Callable[[], views.Decision | None]) -> views.Decision | None:
        """Run an approval prompt; Ctrl-C while it waits stops the turn."""
        self._in_prompt = True
        try:
            return ask()
        except KeyboardInterrupt:
            return views.Decision.STOP
        finally:
            self._in_prompt = False


def _read(call: Iterator[loop_pb2.TurnEventBatch],
          inbox: queue.Queue[views.Event | grpc.RpcError | None]) -> None:
    try:
        for batch in call:
            for event in batch.events:
                inbox.put(convert.event(event))
        inbox.put(None)
    except grpc.RpcError as err:
        inbox.put(err)


def _rpc_failure(err: grpc.RpcError, endpoint: Endpoint, session_id: str) -> TurnOutcome:
    code = err.code()
    if code == grpc.StatusCode.CANCELLED:
        return TurnOutcome(exit_codes.INTERRUPTED, "cancelled_by_client", session_id)
    if code == grpc.StatusCode.UNAVAILABLE:
        raise ServiceUnavailable(
            f"the loop service at {endpoint} stopped answering during the turn",
            hint="See `ai-coding logs loop`; the session is saved, continue it with --session " + session_id,
        )
    print(f"ai-coding run: the loop refused the turn: {err.details()}", file=sys.stderr)
    return TurnOutcome(exit_codes.FAILED, code.name.lower(), session_id)
