"""Claude Code's hook format: what such a hook reads on stdin and how its answer is read.

So a user's existing hooks work unchanged: the stdin object carries Claude Code's field names
(``hook_event_name``, ``tool_name`` with its capitalized tool names, ``tool_input``,
``tool_response``, ``prompt``), exit code 2 blocks with stderr as the reason, and a JSON
answer (``decision``/``reason``, ``hookSpecificOutput.permissionDecision``, ``updatedInput``,
``additionalContext``) is understood. docs/hooks.md lists what is not supported.
"""

from __future__ import annotations

import json
from typing import Any

from services.loop.hooks.answer import Verdict
from services.loop.hooks.runner import HookFailed, RawAnswer

# Our tool names -> Claude Code's (a matcher may name either).
TOOL_NAMES = {"bash": "Bash", "read": "Read", "write": "Write", "edit": "Edit", "glob": "Glob", "grep": "Grep",
              "webfetch": "WebFetch", "todo_write": "TodoWrite", "ask_user": "AskUserQuestion"}
# Events whose plain (non-JSON) stdout on exit 0 is context for the model, as in Claude Code.
CONTEXT_EVENTS = frozenset({"UserPromptSubmit", "SessionStart"})


def tool_name(ours: str) -> str:
    """Claude Code's name for one of our tools (MCP calls keep ours)."""
    return TOOL_NAMES.get(ours, ours)


def stdin_event(event_name: str, ours: dict[str, Any]) -> dict[str, Any]:
    """Our hook event in Claude Code's field names."""
    out: dict[str, Any] = {"session_id": ours["session_id"], "transcript_path": "", "cwd": ours["workspace"],
                           "hook_event_name": event_name}
    if "tool" in ours:
        out["tool_name"] = tool_name(str(ours["tool"]))
        out["tool_input"] = ours.get("arguments") or {}
    if "result" in ours:
        out["tool_response"] = ours["result"]
    if event_name == "UserPromptSubmit":
        out["prompt"] = ours.get("input", "")
    if event_name == "SessionStart":
        out["source"] = "startup"
    if event_name == "Stop":
        out["stop_hook_active"] = False
    return out


class NonBlocking(HookFailed):
    """Claude Code's "non-blocking error" (an exit code other than 0 and 2): shown, and the call goes
    on even for a hook that may block, as Claude Code does."""


def read_answer(event_name: str, answer: RawAnswer) -> Verdict:
    """Exit 2 blocks (stderr is the reason); exit 0 may carry a JSON decision; other codes (1, 126,
    127, 137...) are Claude Code's non-blocking errors: reported, and the call goes on, whatever the
    hook may do. Stdout that opens a JSON object but does not parse is a failed answer (a blocking
    hook's refusal we cannot read: it fails closed, never silently open)."""
    if answer.code == 2:
        reason = answer.stderr.strip() or "blocked by the hook (exit code 2)"
        if event_name == "PreToolUse":
            return Verdict(block=reason)
        if event_name == "PostToolUse":
            return Verdict(context=reason)  # Claude Code shows it to the model after the tool ran
        raise HookFailed("failed", f"exit code 2 on {event_name} (blocking it) is not supported here: {reason[:200]}")
    if answer.code != 0:
        tail = answer.stderr.strip().splitlines()[-1:] or [""]
        raise NonBlocking("failed", f"exited with status {answer.code} (a non-blocking error: the call goes on) "
                                   f"{tail[0][:200]}".strip())
    text = answer.stdout.strip()
    data: Any = None
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as err:
            raise HookFailed("failed", f"its stdout opens a JSON object that does not parse ({err}): "
                                       f"{text[:120]!r}") from None
    if not isinstance(data, dict):
        return Verdict(context=text if event_name in CONTEXT_EVENTS else "")
    return _json_answer(event_name, data)


def _json_answer(event_name: str, data: dict[str, Any]) -> Verdict:
    verdict = Verdict()
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    decision = str(data.get("decision") or "").lower()
    permission = str(specific.get("permissionDecision") or "").lower()
    reason = str(specific.get("permissionDecisionReason") or data.get("reason") or "")
    if event_name == "PreToolUse" and (permission == "deny" or decision == "block"):
        verdict.block = reason or "denied by the hook"
        return verdict
    if event_name == "PostToolUse" and decision == "block" and reason:
        verdict.context = reason
    updated = specific.get("updatedInput")
    if event_name == "PreToolUse" and isinstance(updated, dict):
        verdict.arguments = updated
    extra = specific.get("additionalContext")
    if isinstance(extra, str) and extra.strip():
        verdict.context = "\n".join(p for p in (verdict.context, extra.strip()) if p)
    return verdict
