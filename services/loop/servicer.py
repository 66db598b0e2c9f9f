"""The AgentLoop gRPC servicer: requests in, domain calls, protobuf out via convert.py."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
from ai_coding.v1 import loop_pb2, loop_pb2_grpc

from services.kernel.errors import AiCodingError, abort
from services.kernel.workspace import WorkspaceRefused, private_dirs, workspace_root
from services.loop import convert, inbound
from services.loop.core.attachments import accepts_images, with_attachments
from services.loop.core.errors import BadRequest, SessionNotFound
from services.loop.core.events import Event
from services.loop.core.sessions import UnreadableSession
from services.loop.core.turn_events import Notice
from services.loop.plans.feature import submit_plan
from services.loop.session.commands import run_command
from services.loop.session.deps import SessionOptions
from services.loop.session.open_sessions import LoopRuntime
from services.loop.session.runtime import SessionRuntime

log = logging.getLogger("ai_coding.loop")
# GetSession pages: the default size, and the most a client may ask for (under gRPC's 4 MB default).
DEFAULT_PAGE_BYTES = 1024 * 1024
MAX_PAGE_BYTES = 3 * 1024 * 1024

_CODES = {
    "session_not_found": grpc.StatusCode.NOT_FOUND,
    "ambiguous_session": grpc.StatusCode.FAILED_PRECONDITION,
    "bad_request": grpc.StatusCode.INVALID_ARGUMENT,
    "input_too_large": grpc.StatusCode.INVALID_ARGUMENT,
    "session_busy": grpc.StatusCode.FAILED_PRECONDITION,
    "config_invalid": grpc.StatusCode.FAILED_PRECONDITION,
    "session_unreadable": grpc.StatusCode.DATA_LOSS,
    "session_storage": grpc.StatusCode.FAILED_PRECONDITION,
    "plan_outside_workspace": grpc.StatusCode.INVALID_ARGUMENT,
}


async def _fail(context: grpc.aio.ServicerContext, err: AiCodingError) -> None:
    await abort(context, _CODES.get(err.reason, grpc.StatusCode.INTERNAL), err.reason, str(err))


class AgentLoopServicer(loop_pb2_grpc.AgentLoopServicer):
    """Sessions, slash commands and the turn stream."""

    def __init__(self, runtime: LoopRuntime) -> None:
        self.runtime = runtime

    async def OpenSession(self, request: loop_pb2.OpenSessionLoopRequest, context: grpc.aio.ServicerContext
                          ) -> loop_pb2.OpenSessionLoopResponse:
        if not request.workspace.startswith("/"):
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "bad_request",
                        "workspace must be an absolute path")
        if not Path(request.workspace).is_dir():
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "workspace_missing",
                        f"workspace {request.workspace} is not a directory; create it or pass another -w")
        try:
            workspace_root(request.workspace, Path.home(), private_dirs(None))  # the tools service's rule
        except WorkspaceRefused as err:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, err.reason, str(err))
        try:
            rt, warnings = await self.runtime.open(
                request.workspace, request.session_id, request.model,
                SessionOptions(auto_approve=request.auto_approve, interactive=request.interactive,
                               cwd=request.cwd if request.cwd.startswith("/") else "",
                               skill_dirs=[d for d in request.skill_dirs if d.startswith("/")],
                               client_env=dict(request.client_env) if request.has_client_env else None),
            )
        except AiCodingError as err:
            await _fail(context, err)
            raise
        return loop_pb2.OpenSessionLoopResponse(session_id=rt.session.id, message_count=len(rt.session.messages),
                                                last_seq=rt.events.last_seq, model=rt.model.model_name,
                                                warnings=warnings)

    async def ListSessions(self, request: loop_pb2.ListSessionsRequest, context: grpc.aio.ServicerContext
                           ) -> loop_pb2.ListSessionsResponse:
        store = self.runtime.store(request.workspace)
        summaries = []
        unreadable = []
        for sid in store.ids():
            live = self.runtime.sessions.get(sid)
            if live is not None:
                if live.session.messages or live.busy:  # one nobody follows and nothing was said in: skip
                    summaries.append(convert.summary_to_proto(live.session.summary(), live.busy))
                continue
            entry = store.list_entry(sid)
            if isinstance(entry, UnreadableSession):
                unreadable.append(convert.unreadable_to_proto(entry))
            elif entry is not None and entry.message_count > 0:  # an empty file an older version wrote
                summaries.append(convert.summary_to_proto(entry, False))
        summaries.sort(key=lambda s: s.last_activity, reverse=True)
        return loop_pb2.ListSessionsResponse(sessions=summaries, unreadable=unreadable)

    async def GetSession(self, request: loop_pb2.GetSessionRequest, context: grpc.aio.ServicerContext
                         ) -> loop_pb2.GetSessionResponse:
        try:
            store = self.runtime.store(request.workspace)
            sid = store.resolve(request.session_id)
            live = self.runtime.sessions.get(sid)
            session = live.session if live is not None else store.read(sid)[0]
        except AiCodingError as err:
            await _fail(context, err)
            raise
        # A page stays well under gRPC's default 4 MB message limit, whatever the client's channel.
        page_bytes = min(request.page_bytes, MAX_PAGE_BYTES) if request.page_bytes > 0 else DEFAULT_PAGE_BYTES
        page, following = convert.messages_page(session, request.from_message, page_bytes)
        return loop_pb2.GetSessionResponse(summary=convert.summary_to_proto(session.summary(),
                                                                            live is not None and live.busy),
                                           messages_json=page, next_message=following,
                                           plan_json=convert.plan_json(session))

    async def RunCommand(self, request: loop_pb2.RunCommandRequest, context: grpc.aio.ServicerContext
                         ) -> loop_pb2.RunCommandResponse:
        try:
            rt = await self.runtime.get(request.session_id)
        except SessionNotFound as err:
            await _fail(context, err)
            raise
        try:
            text, data_json = await run_command(rt, request.command, request.args)
        except Exception as exc:  # a broken command answers one line, never a traceback
            log.exception("/%s failed", request.command)
            text, data_json = f"/{request.command} failed: {type(exc).__name__}", "{}"
        return loop_pb2.RunCommandResponse(text=text, data_json=data_json)

    async def ConverseBatched(self, request_iterator: AsyncIterator[loop_pb2.ClientMessage],
                              context: grpc.aio.ServicerContext) -> AsyncIterator[loop_pb2.TurnEventBatch]:
        async for batch in self._stream(request_iterator, context, max_batch=512):
            yield loop_pb2.TurnEventBatch(events=[convert.event_to_proto(e) for e in batch])

    async def _stream(self, request_iterator: AsyncIterator[loop_pb2.ClientMessage],
                      context: grpc.aio.ServicerContext, max_batch: int) -> AsyncIterator[list[Event]]:
        """Start or attach, then follow the session's events until it is idle and all were sent;
        client messages arriving meanwhile are handled by a reader task. Disconnecting ends only
        this stream, never the turn."""
        messages = request_iterator.__aiter__()
        try:
            first = convert.inbound_from_proto(await messages.__anext__())
            rt, after = await self._begin(first)
        except StopAsyncIteration:
            return
        except AiCodingError as err:
            await _fail(context, err)
            return
        reader = asyncio.create_task(self._read(messages, rt))
        editor = int(isinstance(first, inbound.Start) and first.editor_buffers)
        rt.attached += 1
        rt.editors += editor
        try:
            async for batch in rt.events.follow_batches(after, lambda: rt.quiet,
                                                        max_batch):
                yield batch
        finally:
            rt.attached -= 1
            rt.editors -= editor
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader

    async def _begin(self, first: inbound.Inbound) -> tuple[SessionRuntime, int]:
        if isinstance(first, inbound.Start):
            rt = await self.runtime.get(first.session_id)
            after = rt.events.last_seq
            rt.submit(*with_attachments(first.input, first.attachments, rt.model.model_name, accepts_images(rt.model)))
            return rt, after
        if isinstance(first, inbound.StartPlan):
            rt = await self.runtime.get(first.session_id)
            after = rt.events.last_seq
            submit_plan(rt, first.topic)
            return rt, after
        if isinstance(first, inbound.Attach):
            rt = await self.runtime.get(first.session_id)
            return rt, int(first.after_seq)
        raise BadRequest("the first message of ConverseBatched must be start or attach (or plan, for /plan)",
                         hint="Send ClientMessage.start (new input), .plan (/plan <topic>) or .attach (re-attach "
                              "after a seq).")

    async def _read(self, messages: AsyncIterator[loop_pb2.ClientMessage], rt: SessionRuntime) -> None:
        async for raw in messages:
            message = convert.inbound_from_proto(raw)
            try:
                self._handle(message, rt)
            except AiCodingError as err:
                rt.events.emit(rt.turn.number if rt.turn else rt.session.turns, Notice(level="warning", text=str(err)))

    @staticmethod
    def _handle(message: inbound.Inbound, rt: SessionRuntime) -> None:
        if isinstance(message, inbound.ApprovalAnswer):
            rt.answer_approval(message.request_id, message.decision)
        elif isinstance(message, inbound.QuestionReply):
            rt.answer_question(message.request_id, message.answer)
        elif isinstance(message, inbound.BufferAnswer):
            rt.answer_buffer(message.request_id, message.text)
        elif isinstance(message, inbound.InterruptRequest):
            rt.interrupt(message.scope)
        elif isinstance(message, inbound.StartPlan):
            submit_plan(rt, message.topic)
        elif isinstance(message, inbound.Queue | inbound.Start):
            rt.submit(*with_attachments(message.input, message.attachments, rt.model.model_name,
                                        accepts_images(rt.model)))
        else:
            raise BadRequest("unexpected message on a running stream", hint="Send approval, answer, interrupt "
                             "or queue after start/attach.")
