"""Tools the loop answers itself: tool_search, ask_user, memory_search/memory_write (the MCP ones:
mcp_tools.py).

Each is a ``ports.ToolDef`` with its handler (todo_write is the session
runtime's, as it changes the session's task state). Their schemas are kept
short on purpose (every byte is paid on every step); memory_* and mcp_call
use the schemas their services define (pure modules, no SDK or storage
import); the ones a model rarely needs are deferred and only sent after
``tool_search`` loaded them. Memory and MCP are auxiliary: when their service
fails the call gets an error result and the turn emits a Degraded event
(the dispatcher turns ``AuxiliaryError`` into both), never a failure.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from services.loop.core.approvals import Decision, RequestKind, Resolution
from services.loop.core.domain import answer_wait_limit, call_deadline
from services.loop.core.ports import ElicitAsker, ToolCall, ToolContext, ToolDef, ToolOutcome
from services.loop.core.turn_events import QuestionAsked, QuestionResolved
from services.loop.policy.codes import ErrorCode
from services.loop.policy.permissions import Level
from services.loop.tools.args import define, schema_of
from services.mcp_gateway.elicitation import (
    ElicitAsk,
    ElicitReply,
    Value,
    form_fields,
    parse_field,
    question_text,
)
from services.memory.tools_schema import (
    MEMORY_SEARCH_DESCRIPTION,
    MEMORY_WRITE_DESCRIPTION,
    MemorySearchArgs,
    MemoryWriteArgs,
)

# Calls to the loop's own tools wait at most this long for an auxiliary service.
LOCAL_CALL_TIMEOUT_S = 30.0


def _timeout(ctx: ToolContext) -> float:
    return call_deadline(min(ctx.remaining(), LOCAL_CALL_TIMEOUT_S))


@dataclass(frozen=True)
class ToolSearchArgs:
    query: str


@dataclass(frozen=True)
class AskUserArgs:
    question: str
    options: list[str] | None = None


async def _tool_search(ctx: ToolContext, call: ToolCall, args: ToolSearchArgs) -> ToolOutcome:
    found = ctx.registry.search(args.query)
    ctx.registry.load(t.name for t in found)
    return tool_search_outcome(call.id, found)


async def _ask_user(ctx: ToolContext, call: ToolCall, args: AskUserArgs) -> ToolOutcome:
    question, options = args.question, list(args.options or [])
    if not ctx.interactive:
        return ToolOutcome(call.id, call.name, True, "no_user: nobody can answer; state your assumption and decide",
                           data={"status": "no_user"})
    answer = (await ask_question(ctx, question, options)).answer.strip()
    if not answer:
        return ToolOutcome(call.id, call.name, True, "no_answer: the user gave no answer; decide yourself",
                           data={"status": "no_answer"})
    return ToolOutcome(call.id, call.name, True, f"user answered: {answer}", data={"status": "answered"})


async def ask_question(ctx: ToolContext, question: str, options: list[str]) -> Resolution:
    """One question to the user on the turn's stream (QuestionAsked/QuestionResolved); the
    resolution's source says "timeout" or "turn_ended" when nobody answered."""
    request_id, future = ctx.pending.open(RequestKind.QUESTION)
    ctx.emit(QuestionAsked(request_id=request_id, question=question, options=options))
    try:
        limit = answer_wait_limit(ctx.remaining())
        limit = ctx.ask_timeout_seconds if limit is None else min(limit, ctx.ask_timeout_seconds)
        resolution = await asyncio.wait_for(future, timeout=max(limit, 0.01))
    except TimeoutError:
        ctx.pending.forget(request_id)
        resolution = Resolution(request_id, Decision.DENY, source="timeout")
    ctx.emit(QuestionResolved(request_id=request_id, answer=resolution.answer.strip(), source=resolution.source))
    return resolution


# An answer that refuses an MCP server's question (the rest of the form is not asked).
DECLINE = "/decline"
# Asking a field again after an answer of the wrong type, at most this often.
FIELD_ATTEMPTS = 3


def elicit_asker(ctx: ToolContext) -> ElicitAsker:
    """Put an MCP server's elicitation to the user: one question per form field (a URL request is
    one question), typed answers checked; declined when nobody can answer, cancelled when the
    question went unanswered."""

    async def ask(request: ElicitAsk) -> ElicitReply:
        if not ctx.interactive:
            return ElicitReply("decline")
        fields = form_fields(request.schema) if request.mode == "form" else []
        if not fields:
            resolution = await ask_question(ctx, question_text(request, None), ["accept", "decline"])
            if resolution.source != "user":
                return ElicitReply("cancel")
            return ElicitReply("accept" if resolution.answer.strip().lower() in ("accept", "a", "y", "yes", "done")
                               else "decline")
        content: dict[str, Value] = {}
        for index, item in enumerate(fields, 1):
            text = question_text(request, item, index, len(fields))
            for _ in range(FIELD_ATTEMPTS):
                resolution = await ask_question(ctx, text, list(item.options))
                if resolution.source != "user":
                    return ElicitReply("cancel")
                if resolution.answer.strip() == DECLINE:
                    return ElicitReply("decline")
                value, problem = parse_field(item, resolution.answer)
                if not problem:
                    if value is not None:
                        content[item.name] = value
                    break
                text = f"{problem}; try again.\n{question_text(request, item, index, len(fields))}"
            else:
                return ElicitReply("decline")
        return ElicitReply("accept", content)

    return ask


async def _memory_search(ctx: ToolContext, call: ToolCall, args: dict[str, Any]) -> ToolOutcome:
    if ctx.memory is None:
        return unavailable(call)
    recalled = await ctx.memory.search(ctx.workspace, args, _timeout(ctx))
    if recalled.timed_out:
        ctx.on_degraded("memory_recall", "recall ran past its time budget; hits returned as ranked")
    return ToolOutcome(call.id, call.name, True, recalled.text)


async def _memory_write(ctx: ToolContext, call: ToolCall, args: dict[str, Any]) -> ToolOutcome:
    if ctx.memory is None:
        return unavailable(call)
    return ToolOutcome(call.id, call.name, True, await ctx.memory.write(ctx.workspace, args, _timeout(ctx)))


TOOL_SEARCH = define(
    "tool_search", "Find and load tools not listed yet (background jobs, memory search/write, MCP, skills, "
                   "acceptance_propose). Query: keywords.",
    ToolSearchArgs, _tool_search, permission=Level.ALLOW,
)
ASK_USER = define("ask_user", "Ask the user one question when a decision needs them; returns their answer.",
                  AskUserArgs, _ask_user, permission=Level.ALLOW)
# The memory service owns these definitions (every parameter the spec gives them); the dispatcher
# checks a call against them, and the memory adapter parses with them into the service's query.
MEMORY_SEARCH = ToolDef("memory_search", MEMORY_SEARCH_DESCRIPTION, schema_of(MemorySearchArgs), permission=Level.ALLOW,
                        deferred=True, handler=_memory_search, args=MemorySearchArgs)
MEMORY_WRITE = ToolDef("memory_write", MEMORY_WRITE_DESCRIPTION, schema_of(MemoryWriteArgs), permission=Level.ALLOW,
                       deferred=True, handler=_memory_write, args=MemoryWriteArgs)


def local_tools(interactive: bool, has_memory: bool) -> list[ToolDef]:
    """The loop's own stateless tools for a session (ask_user only when someone can answer)."""
    tools = [TOOL_SEARCH]
    if interactive:
        tools.append(ASK_USER)
    if has_memory:
        tools += [MEMORY_SEARCH, MEMORY_WRITE]
    return tools


def tool_search_outcome(call_id: str, found: list[ToolDef]) -> ToolOutcome:
    """The tool_search result listing what got loaded."""
    if not found:
        return ToolOutcome(call_id, "tool_search", True, "no deferred tool matches; try other keywords",
                           data={"loaded": []})
    lines = [f"- {t.name}: {t.description}" for t in found]
    return ToolOutcome(call_id, "tool_search", True, "loaded (callable from your next step):\n" + "\n".join(lines),
                       data={"loaded": [t.name for t in found]})


def unavailable(call: ToolCall) -> ToolOutcome:
    return ToolOutcome.error(call.id, call.name, ErrorCode.UNAVAILABLE, f"{call.name} is not available in this session")
