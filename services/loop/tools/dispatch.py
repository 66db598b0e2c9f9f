"""One tool batch: precheck, permission gate, approvals, execution, results.

Every call of a batch ends with exactly one ToolOutcome (the pipeline pairs
each with a tool message): refused calls get an error result the model can act
on, allowed ones run (parallel-safe neighbours concurrently), and calls still
running when the batch is interrupted come back as ``cancelled_by_user``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from services.kernel.offloop import CheckTimeout, off_loop
from services.kernel.titles import tool_title
from services.kernel.tool_args import ArgumentError
from services.loop.core.approvals import Decision, Pending, RequestKind, Resolution, is_allowed
from services.loop.core.domain import answer_wait_limit, call_deadline
from services.loop.core.errors import ApprovalStop, AuxiliaryError
from services.loop.core.ports import (
    McpClient,
    MemoryClient,
    ToolCall,
    ToolChunkEvent,
    ToolDef,
    ToolIndex,
    ToolOutcome,
    ToolRunner,
)
from services.loop.core.turn_events import (
    ApprovalRequested,
    ApprovalResolved,
    EventBody,
    ToolChunk,
    ToolFinished,
    ToolStarted,
)
from services.loop.policy.codes import ErrorCode
from services.loop.policy.guards import Refusal
from services.loop.policy.permissions import Level, Verdict
from services.loop.tools.editor_buffers import with_buffer
from services.loop.tools.network_approval import network_asker
from services.loop.tools.previews import approval_preview, changed_first, checked_preview, wants_dry_run

Emit = Callable[[EventBody], None]
# (tool, arguments) -> the gate's verdict.
Gate = Callable[[ToolDef, dict[str, Any]], Verdict]
# (call, arguments) -> a guard's refusal (duplicate call, strict path escape) or None.
Guard = Callable[[ToolCall, dict[str, Any]], Refusal | None]
# (call, arguments) -> the call to run (arguments maybe rewritten by a tool.before hook) or its refusal.
BeforeTool = Callable[[ToolCall, dict[str, Any]], Awaitable[ToolCall | ToolOutcome]]
# (call, outcome) -> None: tool.after hooks (observe only).
AfterTool = Callable[[ToolCall, ToolOutcome], Awaitable[None]]
# Chat Completions tool messages beyond this are cut (head and tail kept) so one
# runaway output cannot crowd out the history; the tools service caps output too.
MAX_RESULT_CHARS = 60_000
# An approval preview waits at most this long for the tools service's dry run, then
# falls back to a diff of the arguments: a preview never stalls the turn.
PREVIEW_TIMEOUT_S = 2.0

log = logging.getLogger("ai_coding.loop")


def no_guard(call: ToolCall, arguments: dict[str, Any]) -> Refusal | None:
    return None


async def no_before(call: ToolCall, arguments: dict[str, Any]) -> ToolCall | ToolOutcome:
    return call


async def no_after(call: ToolCall, outcome: ToolOutcome) -> None:
    return None


@dataclass
class DispatchContext:
    """What a batch needs from its session and turn (also the ``ports.ToolContext`` handlers get)."""

    session_id: str
    workspace: str
    runner: ToolRunner
    registry: ToolIndex
    allowed_always: list[str]
    interactive: bool
    emit: Emit
    pending: Pending
    remaining: Callable[[], float]
    gate: Gate
    memory: MemoryClient | None = None
    mcp: McpClient | None = None
    guard: Guard = no_guard
    ask_timeout_seconds: float = 300.0
    on_degraded: Callable[[str, str], None] = lambda component, reason: None
    preview_timeout_seconds: float = PREVIEW_TIMEOUT_S
    before_tool: BeforeTool = no_before
    after_tool: AfterTool = no_after
    outcomes: dict[str, ToolOutcome] = field(default_factory=dict)
    editor_buffers: Callable[[], bool] = lambda: False
    """An editor follows the session: a read shows its unsaved buffer (tools/editor_buffers.py)."""


async def run_batch(ctx: DispatchContext, calls: list[ToolCall]) -> None:
    """Run ``calls``; results land in ``ctx.outcomes`` by call id (also when cancelled)."""
    runnable: list[ToolCall] = []
    for call in calls:
        ctx.emit(ToolStarted(call_id=call.id, tool=call.name, arguments_json=call.arguments_json,
                             title=tool_title(call.name, _args(call))))
    stop = False
    for call in calls:
        if stop:
            _finish(ctx, ToolOutcome.error(call.id, call.name, ErrorCode.CANCELLED, "the user stopped the turn"))
            continue
        refusal = await _precheck(ctx, call, runnable)
        if isinstance(refusal, ToolCall):
            runnable.append(refusal)
            continue
        _finish(ctx, refusal)
        stop = refusal.error_code == ErrorCode.STOPPED_BY_USER
    if stop:
        for call in runnable:
            _finish(ctx, ToolOutcome.error(call.id, call.name, ErrorCode.CANCELLED, "the user stopped the turn"))
        raise ApprovalStop
    for group in _groups(ctx, runnable):
        await asyncio.gather(*(_execute(ctx, call) for call in group))


def fill_cancelled(ctx: DispatchContext, calls: list[ToolCall], code: ErrorCode, message: str) -> None:
    """Give every call without a result an error result (interrupt, turn end)."""
    for call in calls:
        if call.id not in ctx.outcomes:
            _finish(ctx, ToolOutcome.error(call.id, call.name, code, message, limit_hit="cancelled"))


def _args(call: ToolCall) -> dict[str, Any]:
    if call.parse_error:
        return {}
    try:
        return call.arguments()
    except ValueError:
        return {}


async def _precheck(ctx: DispatchContext, call: ToolCall, earlier: list[ToolCall]) -> ToolOutcome | ToolCall:
    """The call to run (a tool.before hook may have rewritten its arguments), else its refusal. ``earlier``: calls of this batch already
    cleared to run (they run first, so an approval preview must not assume the files as they are)."""
    if call.truncated:
        return ToolOutcome.error(call.id, call.name, ErrorCode.TRUNCATED_CALL, call.parse_error)
    if call.parse_error:
        return ToolOutcome.error(call.id, call.name, ErrorCode.INVALID_ARGUMENTS,
                                 f"the arguments are not a JSON object ({call.parse_error}); send the "
                                 "arguments again as one valid JSON object")
    tool = ctx.registry.get(call.name)
    if tool is None:
        names = ", ".join(ctx.registry.names())
        return ToolOutcome.error(call.id, call.name, ErrorCode.UNKNOWN_TOOL,
                             f"no tool named {call.name!r}; available: {names} (more via tool_search)")
    if tool.deferred:
        ctx.registry.load([call.name])  # the model knew the name; load it rather than bounce
    arguments = _args(call)
    refused = _misfit(call, tool, arguments) or await _guarded(ctx, call, arguments)
    if refused is not None:
        return refused
    hooked = await ctx.before_tool(call, arguments)
    if isinstance(hooked, ToolOutcome):
        return hooked
    if hooked is not call:  # rewritten: the guards and the gate judge what will run, never what was asked
        call, arguments = hooked, _args(hooked)
        refused = _misfit(call, tool, arguments) or await _guarded(ctx, call, arguments)
        if refused is not None:
            return refused
    verdict = await _gated(ctx, tool, arguments)
    if verdict.level == Level.DENY:
        return ToolOutcome.error(call.id, call.name, ErrorCode.PERMISSION_DENIED,
                             f"{verdict.reason}; choose another approach")
    if verdict.level == Level.ALLOW:
        return call
    resolution = await _ask_approval(ctx, call, arguments, verdict.reason, earlier)
    if resolution.decision == Decision.ALLOW_ALWAYS and verdict.grant_key:
        ctx.allowed_always.append(verdict.grant_key)
    if is_allowed(resolution.decision):
        return call
    if resolution.decision == Decision.STOP:
        return ToolOutcome.error(call.id, call.name, ErrorCode.STOPPED_BY_USER, "the user stopped the turn")
    return ToolOutcome.error(call.id, call.name, ErrorCode.DENIED_BY_USER,
                         f"the user did not approve this {call.name} call ({resolution.source}); "
                         "do not retry it unchanged")


def _misfit(call: ToolCall, tool: ToolDef, arguments: dict[str, Any]) -> ToolOutcome | None:
    """The uniform refusal of arguments that do not fit ``tool``'s definition, before anything runs
    (no approval is asked for a call that cannot work)."""
    try:
        tool.check(arguments)
    except ArgumentError as err:
        return ToolOutcome.error(call.id, call.name, ErrorCode.INVALID_ARGUMENTS, str(err))
    return None


async def _gated(ctx: DispatchContext, tool: ToolDef, arguments: dict[str, Any]) -> Verdict:
    """The gate's verdict, computed off the event loop (a long command takes CPU to check)."""
    try:
        return await off_loop(ctx.gate, tool, arguments)
    except CheckTimeout as exc:
        return Verdict(Level.DENY, f"the permission check was stopped: {exc}; refused (send a shorter call)")


async def _guarded(ctx: DispatchContext, call: ToolCall, arguments: dict[str, Any]) -> ToolOutcome | None:
    """The guards' refusal of ``call`` (duplicate call, strict path escape), or None to go on.
    They run off the event loop, like the gate."""
    try:
        refusal = await off_loop(ctx.guard, call, arguments)
    except CheckTimeout as exc:
        refusal = Refusal(ErrorCode.GUARD_FAILED, f"a safety check was stopped: {exc}; the call was refused")
    except Exception as exc:  # a broken guard refuses (fail closed); the call still gets its result
        refusal = Refusal(ErrorCode.GUARD_FAILED, f"a safety check failed ({type(exc).__name__}); the call was refused")
    if refusal is None:
        return None
    return ToolOutcome(call.id, call.name, False, f"{refusal.code}: {refusal.message}", data=refusal.data,
                       error_code=refusal.code, error_message=refusal.message)


def proof_asker(make_ctx: Callable[[], DispatchContext]) -> Callable[[str, dict[str, Any], str], Awaitable[bool]]:
    """How the acceptance gate asks about a WARN proof the model chose: as a WARN bash call is asked."""

    async def ask(call_id: str, arguments: dict[str, Any], reason: str) -> bool:
        call = ToolCall(call_id, "bash", json.dumps(arguments))
        resolution = await _ask_approval(make_ctx(), call, arguments, f"acceptance proof the model chose: {reason}", [])
        return is_allowed(resolution.decision)

    return ask


async def _ask_approval(ctx: DispatchContext, call: ToolCall, arguments: dict[str, Any], reason: str,
                        earlier: list[ToolCall]) -> Resolution:
    preview = await _preview(ctx, call, arguments, earlier)
    request_id, future = ctx.pending.open(RequestKind.APPROVAL)
    ctx.emit(ApprovalRequested(request_id=request_id, call_id=call.id, tool=call.name,
                               arguments_json=call.arguments_json, preview=preview, reason=reason))
    try:
        resolution = await asyncio.wait_for(future, timeout=answer_wait_limit(ctx.remaining()))
    except TimeoutError:
        ctx.pending.forget(request_id)
        resolution = Resolution(request_id, Decision.DENY, source="timeout")
    ctx.emit(ApprovalResolved(request_id=request_id, decision=resolution.decision, source=resolution.source))
    return resolution


async def _preview(ctx: DispatchContext, call: ToolCall, arguments: dict[str, Any], earlier: list[ToolCall]
                   ) -> str:
    """The approval preview; a write/edit asks the tools service for its real diff first."""
    if not wants_dry_run(call.name):
        return approval_preview(call.name, arguments)
    wait = max(min(ctx.preview_timeout_seconds, ctx.remaining()), 0.01)
    dry_run: ToolOutcome | None = None
    try:
        dry_run = await asyncio.wait_for(
            ctx.runner.dry_run(ctx.session_id, call.id, call.name, call.arguments_json, wait), wait + 0.5)
        no_answer = ""
    except TimeoutError:
        no_answer = f"did not answer within {wait:g} s"
    except Exception as exc:  # down or broken: the preview falls back, the turn goes on
        log.info("dry run of %s %s gave no preview: %s", call.name, call.id, exc)
        no_answer = "is not reachable"
    changed = changed_first(arguments, [(c.name, _args(c)) for c in earlier])
    return checked_preview(call.name, arguments, dry_run, no_answer, changed_first=changed)


def _groups(ctx: DispatchContext, calls: list[ToolCall]) -> list[list[ToolCall]]:
    """Consecutive parallel-safe calls form one concurrent group; others run alone."""
    groups: list[list[ToolCall]] = []
    for call in calls:
        if _safe(ctx, call) and groups and all(_safe(ctx, c) for c in groups[-1]):
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups


def _safe(ctx: DispatchContext, call: ToolCall) -> bool:
    tool = ctx.registry.get(call.name)
    return tool is not None and tool.parallel_safe


async def _execute(ctx: DispatchContext, call: ToolCall) -> None:
    tool = ctx.registry.get(call.name)
    if tool is not None and tool.handler is not None:
        outcome = await _run_local(ctx, call, tool)
        outcome.call_id, outcome.tool = call.id, call.name
    else:
        outcome = await _run_remote(ctx, call)
        if call.name == "read" and outcome.ok and ctx.editor_buffers():
            outcome = await with_buffer(outcome, _args(call), ctx.workspace, ctx.pending, ctx.emit)
    _finish(ctx, outcome)
    await ctx.after_tool(call, outcome)


async def _run_remote(ctx: DispatchContext, call: ToolCall) -> ToolOutcome:
    outcome: ToolOutcome | None = None
    async for item in ctx.runner.call(ctx.session_id, call.id, call.name, call.arguments_json,
                                     call_deadline(ctx.remaining()), network_asker(ctx, call)):
        if isinstance(item, ToolChunkEvent):
            ctx.emit(ToolChunk(call_id=item.call_id, stream=item.stream, text=item.text))
        else:
            outcome = item
    if outcome is None:
        return ToolOutcome.error(call.id, call.name, ErrorCode.TOOL_SERVICE_UNAVAILABLE, "the call ended without a result")
    if outcome.error_code == ErrorCode.TOOL_SERVICE_UNAVAILABLE:
        ctx.on_degraded("tools", outcome.error_message)
    outcome.call_id, outcome.tool = call.id, call.name
    return outcome


async def _run_local(ctx: DispatchContext, call: ToolCall, tool: ToolDef) -> ToolOutcome:
    """A loop tool's handler; the failures every handler may meet become the call's result."""
    assert tool.handler is not None
    try:
        return await tool.handler(ctx, call, _args(call))
    except ValueError as err:  # argument validation says what to send instead
        return ToolOutcome.error(call.id, call.name, ErrorCode.INVALID_ARGUMENTS, str(err))
    except AuxiliaryError as err:
        ctx.on_degraded(err.component, err.detail)
        message = f"{err.detail}; continue without it"  # the code names the component: memory_unavailable...
        return ToolOutcome(call.id, call.name, False, f"{err.reason}: {message}", error_code=err.reason,
                           error_message=message)


def _finish(ctx: DispatchContext, outcome: ToolOutcome) -> None:
    if outcome.call_id in ctx.outcomes:
        return
    ctx.outcomes[outcome.call_id] = outcome
    ctx.emit(ToolFinished(result=outcome))


def tool_message(outcome: ToolOutcome) -> dict[str, Any]:
    """The role=tool history message for an outcome."""
    text = outcome.output if outcome.ok or outcome.output else f"{outcome.error_code}: {outcome.error_message}"
    if len(text) > MAX_RESULT_CHARS:
        half = MAX_RESULT_CHARS // 2
        text = f"{text[:half]}\n[... {len(text) - MAX_RESULT_CHARS} chars cut ...]\n{text[-half:]}"
    if not outcome.ok and outcome.error_code and not text.startswith(outcome.error_code):
        text = f"{outcome.error_code}: {text}"
    # "_ok" is private (never sent, not saved): the harvest reads it to tell tool evidence from talk.
    return {"role": "tool", "tool_call_id": outcome.call_id, "content": text, "_ok": outcome.ok}
