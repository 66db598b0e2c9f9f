"""One ``session/prompt``: a loop turn streamed as ``session/update``, its approvals asked with
``session/request_permission``, its end as the stop reason.

The stream's disconnect never ends the turn (the loop's rule): an editor that vanishes leaves the
turn running and its approval open to ``ai-coding attach``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from clients.acp import mapping
from clients.acp.rpc import INTERNAL_ERROR, Connection, PeerGone, RpcError
from clients.acp.state import Session
from clients.cli import views

Update = Callable[[str, dict[str, Any]], Awaitable[None]]

if TYPE_CHECKING:
    from clients.acp.prompt import TurnInput
    from clients.cli.connection.loop import LoopClient, TurnStream


class _Turn:
    def __init__(self, conn: Connection, update: Update, session: Session, stream: TurnStream) -> None:
        self.conn = conn
        self.update = update
        self.session = session
        self.stream = stream
        self.output: dict[str, str] = {}
        self.edits: dict[str, list[dict[str, Any]]] = {}
        self.tools: dict[str, str] = {}
        self.open_requests: set[str] = set()
        self.finished: views.TurnFinished | None = None
        self.last_finish = ""

    async def send(self, update: dict[str, Any]) -> None:
        await self.update(self.session.id, update)

    async def on_event(self, event: views.Event) -> None:
        body = event.body
        if event.scope is not None:  # a subagent's own events stay inside its subAgent call
            return
        if isinstance(body, views.TextDelta) and body.text:
            await self.send(mapping.chunk("agent_message_chunk", body.text))
        elif isinstance(body, views.ReasoningDelta) and body.text:
            await self.send(mapping.chunk("agent_thought_chunk", body.text))
        elif isinstance(body, views.ToolStarted):
            update = mapping.tool_call(body.call_id, body.tool, body.arguments_json, body.title,
                                       self.session.workspace)
            self.edits[body.call_id] = update["content"]
            self.tools[body.call_id] = body.tool
            await self.send(update)
        elif isinstance(body, views.ToolChunk) and body.stream in ("stdout", "stderr"):
            self.output[body.call_id] = self.output.get(body.call_id, "") + body.text
            await self.send(mapping.tool_progress(body.call_id, self.output[body.call_id]))
        elif isinstance(body, views.ToolFinished):
            await self.send(mapping.tool_finished(body.result, self.edits.pop(body.result.call_id, [])))
        elif isinstance(body, views.ApprovalRequested):
            self.open_requests.add(body.request_id)
            task = asyncio.ensure_future(self.ask(body))
            self.session.asks.add(task)
            task.add_done_callback(self.session.asks.discard)
        elif isinstance(body, views.ApprovalResolved):
            self.open_requests.discard(body.request_id)
        elif isinstance(body, views.TaskListUpdated):
            await self.send(mapping.plan(body.items))
        elif isinstance(body, views.ModelStepFinished):
            self.last_finish = body.finish_reason
        elif isinstance(body, views.Notice) and body.level in ("warning", "error"):
            await self.send(mapping.chunk("agent_thought_chunk", f"{body.level}: {body.text}\n"))
        elif isinstance(body, views.TurnFinished):
            self.finished = body

    async def ask(self, request: views.ApprovalRequested) -> None:
        """Ask the editor; its answer goes up the stream unless another client answered first."""
        if request.tool in self.session.denied_tools:
            self.stream.approve(request.request_id, views.Decision.DENY)
            return
        call = mapping.tool_call(request.call_id, request.tool, request.arguments_json, "", self.session.workspace)
        del call["sessionUpdate"]
        if request.preview and not call["content"]:
            call["content"] = [mapping.text_content(request.preview)]
        try:
            result = await self.conn.request("session/request_permission", {
                "sessionId": self.session.id, "toolCall": call, "options": mapping.PERMISSION_OPTIONS})
        except PeerGone:
            return  # the editor left: the request stays open for `ai-coding attach` (or its timeout)
        except RpcError:
            result = None
        answer = mapping.permission_answer(result.get("outcome") if isinstance(result, dict) else None)
        if answer.remember_deny:
            self.session.denied_tools.add(request.tool)
        if request.request_id in self.open_requests:
            self.stream.approve(request.request_id, answer.decision)
            if answer.decision in (views.Decision.ALLOW_ONCE, views.Decision.ALLOW_ALWAYS):
                await self.send({"sessionUpdate": "tool_call_update", "toolCallId": request.call_id,
                                 "status": "in_progress"})


async def run_turn(conn: Connection, update: Update, session: Session, client: LoopClient,
                   given: TurnInput) -> dict[str, Any]:
    command = mapping.slash(given.text)
    if command is not None and command[0] != "plan":
        return await _command(update, session, client, *command)
    if command is not None:
        stream = client.start_plan(session.id, command[1])
    else:
        stream = client.start(session.id, given.text, given.attachments)
    session.stream, session.cancelled = stream, False
    turn = _Turn(conn, update, session, stream)
    from clients.cli.connection.loop import ClientError

    try:
        async for event in stream.events():
            await turn.on_event(event)
            if turn.finished is not None:
                break
    except ClientError as err:
        raise RpcError(INTERNAL_ERROR, f"the turn stream broke: {err}") from None
    finally:
        stream.close()
        session.stream = None
    finished = turn.finished
    if finished is None:
        raise RpcError(INTERNAL_ERROR, "the loop ended the turn stream without a result; "
                       "`ai-coding attach` shows the session")
    reason = mapping.stop_reason(finished.status, turn.last_finish, session.cancelled)
    if reason is None:
        raise RpcError(INTERNAL_ERROR, f"the turn failed: {finished.reason or finished.handoff or 'see the trace'}")
    if not finished.text and finished.handoff and reason != "cancelled":
        await turn.send(mapping.chunk("agent_message_chunk", finished.handoff))
    return {"stopReason": reason}


async def _command(update: Update, session: Session, client: LoopClient, name: str, args: str) -> dict[str, Any]:
    from clients.cli.connection.loop import ClientError

    try:
        reply = await client.run_command(session.id, name, args)
        text = reply.text
    except ClientError as err:
        text = f"/{name} failed: {err}"
    await update(session.id, mapping.chunk("agent_message_chunk", text or f"/{name}: done"))
    if name == "permissions" and args.strip() in {m[0] for m in mapping.MODES}:
        await update(session.id, {"sessionUpdate": "current_mode_update", "currentModeId": args.strip()})
    return {"stopReason": "end_turn"}
