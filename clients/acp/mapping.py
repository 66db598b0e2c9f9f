"""What the loop says, as ACP says it: pure functions from view models to protocol objects.

Stdlib and :mod:`clients.cli.views` only. Tool calls: a kind and a title, the files they touch
(``locations``), the raw input, a status and content (an ``edit``/``write`` as a diff block,
shell output as text). The todo list is the plan, our slash commands the available commands,
our permission modes the session modes, and a turn's status its stop reason.
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clients.acp.hello import PROTOCOL_VERSION as PROTOCOL_VERSION
from clients.acp.hello import capabilities as capabilities
from clients.cli import views
from clients.cli.slash import COMMANDS as REPL_COMMANDS

# ---- session modes: our permission modes ----

MODES: tuple[tuple[str, str, str], ...] = (
    ("confirm", "Confirm", "Ask before every write, shell command or network call."),
    ("auto", "Auto", "Run tools without asking (the loop's deny rules still hold)."),
    ("readonly", "Read-only (plan)", "Read and plan only: writes are refused."),
)


def mode_state(current: str) -> dict[str, Any]:
    return {"currentModeId": current if current in {m[0] for m in MODES} else "confirm",
            "availableModes": [{"id": i, "name": n, "description": d} for i, n, d in MODES]}


# ---- available commands: the REPL's slash commands that make sense in an editor ----

EDITOR_DOES: dict[str, str] = {
    "help": "the editor lists the available commands itself",
    "resume": "the editor's session list loads a session (session/load)",
    "clear": "the editor starts a new session (session/new)",
    "quit": "the editor ends the agent",
    "last": "the editor shows every tool call's input and output in the thread",
    "thinking": "the editor shows the reasoning as it streams (thought chunks)",
    "diff": "the editor shows each edit as a diff in the thread",
}
"""REPL commands left out of the editor's list, and why: the editor does that itself."""

ADAPTER_ANSWERS = frozenset({"review", "cost", "mcp", "memory"})
"""REPL commands the REPL itself answers (not the loop) that the adapter answers the same way
(clients/acp/commands.py); every other listed command goes to the loop (``RunCommand``)."""

COMMANDS: tuple[tuple[str, str, str], ...] = tuple(
    (name, description, hint.strip("[]<>"))
    for name, (hint, description) in REPL_COMMANDS.items() if name not in EDITOR_DOES)
"""(name, description, input hint) of every command the editor lists, in the REPL's order and words."""
COMMAND_NAMES = frozenset(name for name, _, _ in COMMANDS)


def available_commands() -> dict[str, Any]:
    out = []
    for name, description, hint in COMMANDS:
        entry: dict[str, Any] = {"name": name, "description": description}
        if hint:
            entry["input"] = {"hint": hint}
        out.append(entry)
    return {"sessionUpdate": "available_commands_update", "availableCommands": out}


def slash(text: str) -> tuple[str, str] | None:
    """``/name args`` naming one of :data:`COMMANDS` -> (name, args); anything else goes to the model."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, args = stripped[1:].partition(" ")
    return (name, args.strip()) if name in COMMAND_NAMES else None


# ---- permission requests ----


class Option(enum.Enum):
    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT_ONCE = "reject_once"
    REJECT_ALWAYS = "reject_always"


PERMISSION_OPTIONS = [
    {"optionId": Option.ALLOW_ONCE.value, "name": "Allow once", "kind": "allow_once"},
    {"optionId": Option.ALLOW_ALWAYS.value, "name": "Allow always (this session)", "kind": "allow_always"},
    {"optionId": Option.REJECT_ONCE.value, "name": "Reject", "kind": "reject_once"},
    {"optionId": Option.REJECT_ALWAYS.value, "name": "Reject always (this session)", "kind": "reject_always"},
]


@dataclass(frozen=True)
class Answer:
    """How an editor's permission outcome reaches the loop; ``remember_deny``: the adapter refuses
    this tool by itself from now on in the session (the loop has no "deny always" of its own)."""

    decision: views.Decision
    remember_deny: bool = False


def permission_answer(outcome: Mapping[str, Any] | None) -> Answer:
    """RequestPermissionOutcome -> our decision; anything unknown or cancelled stops the turn."""
    if not outcome or outcome.get("outcome") != "selected":
        return Answer(views.Decision.STOP)
    chosen = outcome.get("optionId")
    if chosen == Option.ALLOW_ONCE.value:
        return Answer(views.Decision.ALLOW_ONCE)
    if chosen == Option.ALLOW_ALWAYS.value:
        return Answer(views.Decision.ALLOW_ALWAYS)
    if chosen == Option.REJECT_ALWAYS.value:
        return Answer(views.Decision.DENY, remember_deny=True)
    return Answer(views.Decision.DENY)


# ---- tool calls ----

KINDS: dict[str, str] = {
    "read": "read", "glob": "search", "grep": "search", "websearch": "search",
    "edit": "edit", "write": "edit", "bash": "execute", "job_start": "execute", "job_stop": "execute",
    "job_output": "read", "job_list": "read", "webfetch": "fetch", "network": "fetch", "todo": "think",
    "todo_write": "think",
}


def tool_kind(tool: str) -> str:
    return KINDS.get(tool, "other")


def arguments(arguments_json: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments_json or "{}")
    except json.JSONDecodeError:
        return {"raw": arguments_json}
    return value if isinstance(value, dict) else {"value": value}


def absolute(path: str, workspace: str) -> str:
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(workspace, path))


def locations(args: Mapping[str, Any], workspace: str) -> list[dict[str, Any]]:
    path = args.get("path") or args.get("file_path")
    return [{"path": absolute(str(path), workspace)}] if isinstance(path, str) and path else []


def diff(tool: str, args: Mapping[str, Any], workspace: str) -> list[dict[str, Any]]:
    """An edit or a write as ACP's diff block (the replaced text and its replacement; a write's old
    text is unknown here, so it is null: the editor shows it against the file it has)."""
    path = args.get("path")
    if not isinstance(path, str) or not path:
        return []
    if tool == "edit" and isinstance(args.get("new_string"), str):
        return [{"type": "diff", "path": absolute(path, workspace), "oldText": str(args.get("old_string", "")),
                 "newText": args["new_string"]}]
    if tool == "write" and isinstance(args.get("content"), str):
        return [{"type": "diff", "path": absolute(path, workspace), "oldText": None, "newText": args["content"]}]
    return []


def title(tool: str, args: Mapping[str, Any], given: str = "") -> str:
    if given:
        return given
    target = args.get("command") or args.get("path") or args.get("pattern") or args.get("url") or ""
    return f"{tool} · {str(target)[:80]}" if target else tool


def tool_call(call_id: str, tool: str, arguments_json: str, given_title: str, workspace: str,
              status: str = "pending") -> dict[str, Any]:
    """A ``tool_call`` update (the same fields make the ``toolCall`` of a permission request)."""
    args = arguments(arguments_json)
    return {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": title(tool, args, given_title),
            "kind": tool_kind(tool), "status": status, "rawInput": args,
            "locations": locations(args, workspace), "content": diff(tool, args, workspace)}


def text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


OUTPUT_TAIL = 16_000
"""Characters of a running command's output an update carries (it replaces the content each time)."""


def tool_progress(call_id: str, output: str) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress",
            "content": [text_content(output[-OUTPUT_TAIL:])]}


def tool_finished(result: views.ToolResult, edits: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The final ``tool_call_update``: completed or failed, the diff kept for edits, the output text."""
    text = result.output if result.ok else (result.error.message or result.output or "failed")
    if not result.ok and result.error.hint:
        text = f"{text}\n{result.error.hint}"
    content = [*edits, text_content(text[-OUTPUT_TAIL:])] if text else list(edits)
    raw: dict[str, Any] = {"ok": result.ok, "output": result.output[-OUTPUT_TAIL:]}
    if not result.ok:
        raw["error"] = {"code": result.error.code, "message": result.error.message}
    return {"sessionUpdate": "tool_call_update", "toolCallId": result.call_id,
            "status": "completed" if result.ok else "failed", "content": content, "rawOutput": raw}


# ---- messages and the plan ----


def chunk(kind: str, text: str) -> dict[str, Any]:
    """``agent_message_chunk``, ``agent_thought_chunk`` or ``user_message_chunk`` of text."""
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


PLAN_STATUS = {"pending": "pending", "in_progress": "in_progress", "completed": "completed",
               "blocked": "pending"}


def plan(items: Sequence[views.TaskItem]) -> dict[str, Any]:
    """The todo list as the ACP plan (dropped items left out; blocked ones stay pending)."""
    entries = [{"content": item.content, "priority": "medium", "status": PLAN_STATUS[item.status]}
               for item in items if item.status in PLAN_STATUS]
    return {"sessionUpdate": "plan", "entries": entries}


# ---- stop reasons ----

_STOP = {
    views.TurnStatus.COMPLETED: "end_turn",
    views.TurnStatus.ACCEPTANCE_FAILED: "end_turn",
    views.TurnStatus.PLAN_INCOMPLETE: "end_turn",
    views.TurnStatus.MAX_ITERATIONS: "max_turn_requests",
    views.TurnStatus.TIMEOUT: "max_turn_requests",
    views.TurnStatus.BUDGET: "max_tokens",
    views.TurnStatus.INTERRUPTED: "cancelled",
    views.TurnStatus.APPROVAL_STOP: "cancelled",
}


def stop_reason(status: views.TurnStatus, last_finish: str, cancelled: bool) -> str | None:
    """The PromptResponse's stopReason; None for a failed turn (answered as an error instead).
    A cancel the editor asked for is "cancelled" whatever the loop's status says, as ACP requires."""
    if cancelled:
        return "cancelled"
    reason = _STOP.get(status)
    if reason == "end_turn" and last_finish == "length":
        return "max_tokens"
    if reason == "end_turn" and last_finish == "content_filter":
        return "refusal"
    return reason
