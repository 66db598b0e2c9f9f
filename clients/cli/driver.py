"""The client's one turn driver: follow a turn stream until the turn ends (``run``, the demo, the REPL).

It hands every event to ``on_event`` in order, stops when ``until`` says the turn is over
(by default: at ``TurnFinished``), and reports how the stream ended as a :class:`TurnEnd`.
A Start that failed before any event (the loop is restarting) is sent again while
``resend`` allows it. Answers, interrupts and queued input go to :attr:`TurnDriver.stream`.
What to do with the end (an exit code, a line in the REPL) is the caller's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from clients.cli import views
from clients.cli.attachments import Attachment
from clients.cli.connection.loop import ClientError, LoopClient, TurnStream
from services.kernel.records import mutable_record, record


@record
class TurnEnd:
    """How a followed stream ended: at the turn's final event, with an error, or just closed."""

    finished: views.TurnFinished | None = None
    error: ClientError | None = None


def at_turn_finished(event: views.Event) -> bool:
    """The default end: the turn's final event."""
    return isinstance(event.body, views.TurnFinished)


@mutable_record
class OwnTurn:
    """Whether the events read so far still belong to someone else's turn (pure).

    A Start on a session whose turn another client runs is queued (``InputQueued`` with our text):
    that turn's events stream by, but its ``TurnFinished`` is not ours; ours begins at the
    ``TurnStarted`` carrying our text."""

    text: str = ""
    waiting: bool = False

    def see(self, body: object) -> None:
        if not self.text:
            return
        if isinstance(body, views.InputQueued) and body.input == self.text:
            self.waiting = True
        elif isinstance(body, views.TurnStarted) and body.input == self.text:
            self.waiting = False


class TurnDriver:
    """Follows one turn of ``session_id`` on the loop, whoever is watching it."""

    def __init__(self, client: LoopClient, session_id: str, on_event: Callable[[views.Event], None], *,
                 until: Callable[[views.Event], bool] = at_turn_finished,
                 resend: Callable[[ClientError], Awaitable[bool]] | None = None,
                 on_stream: Callable[[TurnStream], None] | None = None, plan: bool = False) -> None:
        self.client = client
        self.plan = plan
        """The input is a /plan topic (the loop plans it and runs the steps), not a prompt."""
        self.session_id = session_id
        self.on_event = on_event
        self.until = until
        self.resend = resend
        self.on_stream = on_stream
        self.stream: TurnStream | None = None
        self._own = OwnTurn()

    def start(self, text: str, attachments: Sequence[Attachment] = (), editor_buffers: bool = False) -> TurnStream:
        """Open the stream that starts a turn with ``text`` (sent at once; :meth:`follow` reads it)."""
        stream = (self.client.start_plan(self.session_id, text) if self.plan
                  else self.client.start(self.session_id, text, attachments, editor_buffers))
        self._own = OwnTurn("" if self.plan else text)  # a queued plan's turns carry its steps' inputs
        self._use(stream)
        return stream

    async def follow(self, stream: TurnStream, text: str = "", attachments: Sequence[Attachment] = ()) -> TurnEnd:
        """Read ``stream`` to the end of the turn. ``text`` (with ``attachments``): the input that started
        it, sent again on a fresh stream when the Start failed before any event and ``resend`` says to."""
        self._use(stream)
        while True:
            received, end = await self._read(stream)
            if end.error is None or not (text and not received and self.resend is not None
                                         and await self.resend(end.error)):
                return end
            stream = self.start(text, attachments)

    async def _read(self, stream: TurnStream) -> tuple[bool, TurnEnd]:
        """(whether any event came, how the stream ended); the stream is closed either way."""
        received = False
        finished: views.TurnFinished | None = None
        try:
            async for event in stream.events():
                received = True
                self._own.see(event.body)
                if isinstance(event.body, views.TurnFinished) and not self._own.waiting:
                    finished = event.body
                self.on_event(event)
                if not self._own.waiting and self.until(event):
                    break
        except ClientError as err:
            return received, TurnEnd(finished=finished, error=err)
        finally:
            stream.close()
        return received, TurnEnd(finished=finished)

    def answer_approval(self, request_id: str, decision: views.Decision) -> None:
        if self.stream is not None:
            self.stream.approve(request_id, decision)

    def interrupt(self, scope: views.Scope) -> None:
        if self.stream is not None:
            self.stream.interrupt(scope)

    def _use(self, stream: TurnStream) -> None:
        self.stream = stream
        if self.on_stream is not None:
            self.on_stream(stream)
