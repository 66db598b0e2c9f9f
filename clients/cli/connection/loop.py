"""The loop service: unary calls with deadlines and the ConverseBatched turn stream (the REPL, ``run``, ``sessions``).

gRPC stays here: the rest of the client sees ``LoopClient`` methods, ``TurnStream``
and ``ClientError`` (one readable line, never a traceback), with view models
(:mod:`clients.cli.views`) in and out.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence

import grpc
from ai_coding.v1 import loop_pb2, loop_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from clients.cli import convert, session_views, views
from clients.cli.attachments import Attachment
from clients.cli.connection import drop_channel, shared_channel
from services.kernel.channels import FAST_RECONNECT, aio_channel
from services.kernel.endpoints import PROTO_SERVICE, Endpoint
from services.kernel.errors import AiCodingError, reason_of

UNARY_TIMEOUT = 15.0
# /compact may ask the model for a summary (in chunks, within the loop's own time budget).
COMPACT_TIMEOUT = 150.0


class ClientError(AiCodingError):
    """A service call failed; ``str()`` is one line for the user, ``detail`` the service's own words,
    ``status`` the gRPC status in lower case ("" when the call never got one)."""

    reason = "loop_call_failed"

    def __init__(self, message: str, *, hint: str = "", reason: str | None = None, detail: str = "",
                 status: str = "") -> None:
        super().__init__(message, hint=hint, reason=reason)
        self.detail = detail
        self.status = status


def _error(err: grpc.RpcError, what: str) -> ClientError:
    code = err.code() if isinstance(err, grpc.aio.AioRpcError) else None
    detail = err.details() if isinstance(err, grpc.aio.AioRpcError) else str(err)
    reason = reason_of(err) or (code.name.lower() if code else "error")
    status = code.name.lower() if code else ""
    # A call cut by the loop's death can end INTERNAL "Internal error from Core" rather than
    # UNAVAILABLE (seen with the loop killed just as a Start went out, under load): with no reason
    # of ours on it (our services put one on every status they send) it is the service going away,
    # so it is retried like UNAVAILABLE instead of losing the input.
    if code == grpc.StatusCode.UNAVAILABLE or (code == grpc.StatusCode.INTERNAL and not reason_of(err)):
        return ClientError(f"{what}: the loop service is not answering", status=status,
                           hint="(run `ai-coding up`, or see `ai-coding logs loop`)", reason="service_unavailable")
    return ClientError(f"{what}: {detail or reason}", reason=reason, detail=detail or "", status=status)


class TurnStream:
    """One ConverseBatched call: ``send`` client messages up, iterate turn events down."""

    def __init__(self, stub: loop_pb2_grpc.AgentLoopStub, first: loop_pb2.ClientMessage) -> None:
        self._outbox: asyncio.Queue[loop_pb2.ClientMessage | None] = asyncio.Queue()
        self._outbox.put_nowait(first)
        # ConverseBatched: one message carries every event ready at that moment (a fast text
        # stream is a few messages instead of hundreds); the events inside are the same, in order.
        self._call = stub.ConverseBatched(self._requests())
        self.closed = False

    async def _requests(self) -> AsyncIterator[loop_pb2.ClientMessage]:
        while True:
            message = await self._outbox.get()
            if message is None:
                return
            yield message

    def _send(self, message: loop_pb2.ClientMessage) -> None:
        """Queue a message for the loop (ignored once the stream is closed)."""
        if not self.closed:
            self._outbox.put_nowait(message)

    def approve(self, request_id: str, decision: views.Decision) -> None:
        """Answer an approval request."""
        self._send(convert.approval(request_id, decision))

    def answer(self, request_id: str, text: str) -> None:
        """Answer an ask_user question."""
        self._send(convert.answer(request_id, text))

    def buffer(self, request_id: str, text: str | None) -> None:
        """Answer a buffer request with the editor's text of the file (None: it has none)."""
        self._send(convert.buffer_reply(request_id, text))

    def interrupt(self, scope: views.Scope) -> None:
        """Cancel the running tool batch or the whole turn."""
        self._send(convert.interrupt(scope))

    def queue(self, text: str) -> None:
        """Input for after the running turn."""
        self._send(convert.queue(text))

    async def events(self) -> AsyncIterator[views.Event]:
        """The events the loop sends until it ends the stream; errors become ``ClientError``."""
        try:
            async for batch in self._call:
                for event in batch.events:
                    yield convert.event(event)
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.CANCELLED:
                raise _error(err, "the turn stream broke") from None
        finally:
            self.closed = True

    def close(self) -> None:
        """Half-close and cancel the call (the loop keeps the turn running)."""
        self.closed = True
        self._outbox.put_nowait(None)
        self._call.cancel()


SKILLS_ENV = "AI_CODING_SKILLS"
"""``--skills DIR`` (absolute paths joined by ``os.pathsep``): skill directories replacing the defaults."""


def skill_dirs() -> list[str]:
    """The ``--skills`` directories this client was started with (empty: the loop's defaults)."""
    return [d for d in os.environ.get(SKILLS_ENV, "").split(os.pathsep) if d]


class LoopClient:
    """Typed calls to the AgentLoop service."""

    def __init__(self, endpoint: Endpoint, cwd: str = "") -> None:
        self.endpoint = endpoint
        shared = shared_channel(endpoint, FAST_RECONNECT)
        self._owned = shared is None
        self._channel = aio_channel(endpoint, options=list(FAST_RECONNECT)) if shared is None else shared
        self.stub = loop_pb2_grpc.AgentLoopStub(self._channel)
        self.cwd = cwd  # where the user is: project instructions are read down to here
        self._streams: list[TurnStream] = []

    async def serving(self, timeout: float = 1.0) -> bool:
        """Whether the loop answers SERVING to grpc.health.v1 Check, asked on this client's channel
        (the one its calls then use: no second connection). A shared channel that got no SERVING is
        dropped, so the next client connects afresh instead of inheriting its reconnect backoff."""
        request = health_pb2.HealthCheckRequest(service=PROTO_SERVICE["loop"])
        try:
            response = await health_pb2_grpc.HealthStub(self._channel).Check(request, timeout=timeout)
            ok = bool(response.status == health_pb2.HealthCheckResponse.SERVING)
        except grpc.RpcError:
            ok = False
        if not ok and not self._owned:
            await drop_channel(self.endpoint, FAST_RECONNECT)
        return ok

    async def open_session(self, workspace: str, session_id: str = "", *, model: str = "",
                           auto_approve: bool = False, interactive: bool = True) -> session_views.OpenedSession:
        """Create a session, or load one by id or unique prefix."""
        from clients.cli.connection.invocation import outgoing_environment

        request = loop_pb2.OpenSessionLoopRequest(workspace=workspace, session_id=session_id, model=model,
                                                  auto_approve=auto_approve, interactive=interactive, cwd=self.cwd,
                                                  skill_dirs=skill_dirs(), client_env=outgoing_environment(),
                                                  has_client_env=True)
        try:
            response: loop_pb2.OpenSessionLoopResponse = await self.stub.OpenSession(request, timeout=UNARY_TIMEOUT)
            return convert.opened(response)
        except grpc.aio.AioRpcError as err:
            raise _error(err, "cannot open the session") from None

    async def list_sessions(self, workspace: str) -> list[session_views.SessionSummary]:
        """Saved sessions of ``workspace`` that can be read, newest activity first."""
        return list((await self.session_list(workspace)).sessions)

    async def session_list(self, workspace: str) -> session_views.SessionList:
        """Saved sessions of ``workspace``, newest activity first, and those that cannot be read."""
        try:
            response = await self.stub.ListSessions(loop_pb2.ListSessionsRequest(workspace=workspace),
                                                    timeout=UNARY_TIMEOUT)
        except grpc.aio.AioRpcError as err:
            raise _error(err, "cannot list sessions") from None
        return convert.session_list(response)

    async def get_session(self, workspace: str, session_id: str) -> session_views.SessionDetail:
        """One session with its messages (for the redraw after /resume)."""
        pages: list[loop_pb2.GetSessionResponse] = []
        following = 0
        try:
            while True:  # page by page: a long session's messages outgrow one gRPC message
                request = loop_pb2.GetSessionRequest(workspace=workspace, session_id=session_id,
                                                     from_message=following)
                response: loop_pb2.GetSessionResponse = await self.stub.GetSession(request, timeout=UNARY_TIMEOUT)
                pages.append(response)
                if response.next_message <= following:  # 0 = the last page (and never loop on a bad answer)
                    return convert.session_detail(pages)
                following = response.next_message
        except grpc.aio.AioRpcError as err:
            raise _error(err, "cannot load the session") from None

    async def run_command(self, session_id: str, command: str, args: str) -> session_views.CommandReply:
        """A slash command the loop handles; UNIMPLEMENTED surfaces as reason ``unimplemented``."""
        request = loop_pb2.RunCommandRequest(session_id=session_id, command=command, args=args)
        try:
            response: loop_pb2.RunCommandResponse = await self.stub.RunCommand(
                request, timeout=COMPACT_TIMEOUT if command == "compact" else UNARY_TIMEOUT)
            return convert.command_reply(response)
        except grpc.aio.AioRpcError as err:
            raise _error(err, f"/{command} failed") from None

    def start(self, session_id: str, text: str, attachments: Sequence[Attachment] = (),
              editor_buffers: bool = False) -> TurnStream:
        """Open a stream that starts a turn with ``text`` (and files or images attached to it);
        ``editor_buffers``: this stream answers the loop's buffer requests (an editor client)."""
        return self._stream(convert.start(session_id, text, attachments, editor_buffers))

    def start_plan(self, session_id: str, topic: str) -> TurnStream:
        """Open a stream that runs ``/plan <topic>`` (a planning turn, then one step per item)."""
        return TurnStream(self.stub, convert.start_plan(session_id, topic))

    def attach(self, session_id: str, after_seq: int) -> TurnStream:
        """Open a stream that follows the session from event ``after_seq`` on."""
        return self._stream(convert.attach(session_id, after_seq))

    def _stream(self, first: loop_pb2.ClientMessage) -> TurnStream:
        self._streams = [s for s in self._streams if not s.closed]
        stream = TurnStream(self.stub, first)
        self._streams.append(stream)
        return stream

    async def close(self) -> None:
        """End this client's open streams (the loop keeps their turns running); a channel of its
        own is closed too (the process's shared one stays for the next client, until exit)."""
        for stream in self._streams:
            if not stream.closed:
                stream.close()
        self._streams.clear()
        if self._owned:
            await self._channel.close()
