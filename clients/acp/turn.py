"""One ``session/prompt``: a loop turn streamed as ``session/update``, its approvals asked with
``session/request_permission``, its end as the stop reason.

The stream's disconnect never ends the turn (the loop's rule): an editor that vanishes leaves the
turn running and its approval open to ``ai-coding attach``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from clients.acp import buffers, commands, mapping
from clients.acp.rpc import INTERNAL_ERROR, Connection, PeerGone, RpcError
from clients.acp.state import Session
from clients.cli import views
from clients.cli.slash import REVIEW_PROMPT

Update = Callable[[str, dict[str, Any]], Awaitable[None]]

if TYPE_CHECKING:
    from clients.acp.prompt import TurnInput
    from clients.cli.connection.loop import LoopClient, TurnStream


class _Turn:
    """What one prompt's turn has shown the editor so far, and the approvals it still waits on."""

    def __init__(self, conn: Connection, session: Session) -> None:
        self.conn = conn
        self.session = session
        self.approve: Callable[[str, views.Decision], None] = lambda request_id, decision: None
        self.output: dict[str, str] = {}
        self.edits: dict[str, list[dict[str, Any]]] = {}
        self.tools: dict[str, str] = {}
        self.open_requests: set[str] = set()
        self.asked: dict[str, int] = {}
        """Approval request id -> the id of the permission request the editor has not answered yet."""
        self.finished: views.TurnFinished | None = None
        self.last_finish = ""
        self.stream: TurnStream | None = None
        """Set when the turn streams with the editor's buffers (``fs.readTextFile``): reads ask the editor."""

    def send(self, update: dict[str, Any]) -> None:
        self.conn.post("session/update", {"sessionId": self.session.id, "update": update})

    def on_event(self, event: views.Event) -> None:
        """One loop event as ACP updates (the turn driver calls this in order, without waiting)."""
        body = event.body
        if event.scope is not None:  # a subagent's own events stay inside its subAgent call
            return
        if isinstance(body, views.BufferRequested):
            if self.stream is not None:  # this turn's stream said it answers them
                task = asyncio.ensure_future(buffers.answer(self.conn, self.session, self.stream, body.request_id,
                                                            body.path))
                self.session.asks.add(task)
                task.add_done_callback(self.session.asks.discard)
        elif isinstance(body, views.TextDelta) and body.text:
            self.send(mapping.chunk("agent_message_chunk", body.text))
        elif isinstance(body, views.ReasoningDelta) and body.text:
            self.send(mapping.chunk("agent_thought_chunk", body.text))
        elif isinstance(body, views.ToolStarted):
            update = mapping.tool_call(body.call_id, body.tool, body.arguments_json, body.title,
                                       self.session.workspace)
            self.edits[body.call_id] = update["content"]
            self.tools[body.call_id] = body.tool
            self.send(update)
        elif isinstance(body, views.ToolChunk) and body.stream in ("stdout", "stderr"):
            self.output[body.call_id] = self.output.get(body.call_id, "") + body.text
            self.send(mapping.tool_progress(body.call_id, self.output[body.call_id]))
        elif isinstance(body, views.ToolFinished):
            self.send(mapping.tool_finished(body.result, self.edits.pop(body.result.call_id, [])))
        elif isinstance(body, views.ApprovalRequested):
            self.open_requests.add(body.request_id)
            task = asyncio.ensure_future(self.ask(body))
            self.session.asks.add(task)
            task.add_done_callback(self.session.asks.discard)
        elif isinstance(body, views.ApprovalResolved):
            self.open_requests.discard(body.request_id)
            if body.request_id in self.asked:  # answered elsewhere (`ai-coding attach`), or the turn ended
                self.conn.cancel_request(self.asked.pop(body.request_id))
        elif isinstance(body, views.TaskListUpdated):
            self.send(mapping.plan(body.items))
        elif isinstance(body, views.ModelStepFinished):
            self.last_finish = body.finish_reason
        elif isinstance(body, views.Notice) and body.level in ("warning", "error"):
            self.send(mapping.chunk("agent_thought_chunk", f"{body.level}: {body.text}\n"))
        elif isinstance(body, views.TurnFinished):
            self.finished = body

    async def ask(self, request: views.ApprovalRequested) -> None:
        """Ask the editor; its answer goes up the stream unless another client answered first."""
        if request.tool in self.session.denied_tools:
            self.approve(request.request_id, views.Decision.DENY)
            return
        call = mapping.tool_call(request.call_id, request.tool, request.arguments_json, "", self.session.workspace)
        del call["sessionUpdate"]
        if request.preview and not call["content"]:
            call["content"] = [mapping.text_content(request.preview)]
        try:
            result = await self.conn.request("session/request_permission", {
                "sessionId": self.session.id, "toolCall": call, "options": mapping.PERMISSION_OPTIONS},
                on_sent=lambda ident: self.asked.__setitem__(request.request_id, ident))
        except PeerGone:
            return  # the editor left: the request stays open for `ai-coding attach` (or its timeout)
        except RpcError:
            result = None
        finally:
            self.asked.pop(request.request_id, None)
        answer = mapping.permission_answer(result.get("outcome") if isinstance(result, dict) else None)
        if answer.remember_deny:
            self.session.denied_tools.add(request.tool)
        if request.request_id in self.open_requests:
            self.approve(request.request_id, answer.decision)
            if answer.decision in (views.Decision.ALLOW_ONCE, views.Decision.ALLOW_ALWAYS):
                self.send({"sessionUpdate": "tool_call_update", "toolCallId": request.call_id,
                                 "status": "in_progress"})


async def run_turn(conn: Connection, update: Update, session: Session, client: LoopClient,
                   given: TurnInput, read_buffers: bool = False, setup: Any = None) -> dict[str, Any]:
    from clients.cli.driver import TurnDriver

    command = mapping.slash(given.text)
    if command is not None and command[0] == "review":
        given, command = replace(given, text=REVIEW_PROMPT), None
    if command is not None and command[0] != "plan":
        return await _command(update, session, client, setup, *command)
    turn = _Turn(conn, session)
    driver = TurnDriver(client, session.id, turn.on_event, plan=command is not None)
    turn.approve = driver.answer_approval
    reads_editor = read_buffers and command is None  # a /plan stream does not carry the flag
    stream = driver.start(command[1] if command is not None else given.text, given.attachments, reads_editor)
    turn.stream = stream if reads_editor else None
    session.stream, session.cancelled = stream, False
    try:
        end = await driver.follow(stream)
    finally:
        session.stream = None
    if end.error is not None and end.finished is None:
        raise RpcError(INTERNAL_ERROR, f"the turn stream broke: {end.error}; `ai-coding attach {session.id}` "
                       "follows the session")
    finished = end.finished
    if finished is not None:
        session.last_usage = finished.usage
    if finished is None:
        raise RpcError(INTERNAL_ERROR, "the loop ended the turn stream without a result; "
                       f"`ai-coding attach {session.id}` shows the session")
    reason = mapping.stop_reason(finished.status, turn.last_finish, session.cancelled)
    if reason is None:
        raise RpcError(INTERNAL_ERROR, f"the turn failed: {finished.reason or finished.handoff or 'see the trace'}")
    if not finished.text and finished.handoff and reason != "cancelled":
        turn.send(mapping.chunk("agent_message_chunk", finished.handoff))
    return {"stopReason": reason}


async def _command(update: Update, session: Session, client: LoopClient, setup: Any, name: str,
                   args: str) -> dict[str, Any]:
    from clients.cli.connection.loop import ClientError

    try:
        if name in mapping.ADAPTER_ANSWERS:
            text = await commands.answer(name, args, session, client, setup)
        else:
            text = (await client.run_command(session.id, name, args)).text
    except ClientError as err:
        text = f"/{name} failed: {err}"
    await update(session.id, mapping.chunk("agent_message_chunk", text or f"/{name}: done"))
    if name == "permissions" and args.strip() in {m[0] for m in mapping.MODES}:
        await update(session.id, {"sessionUpdate": "current_mode_update", "currentModeId": args.strip()})
    return {"stopReason": "end_turn"}
