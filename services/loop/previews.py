"""Human previews for approval requests and tool titles (pure functions)."""

from __future__ import annotations

import difflib
from typing import Any

MAX_PREVIEW_LINES = 80


def approval_preview(tool: str, arguments: dict[str, Any]) -> str:
    """What the user approves: the command, the path, or a unified diff for write/edit."""
    if tool == "bash":
        return str(arguments.get("command", ""))
    path = str(arguments.get("path") or arguments.get("file_path") or "")
    if tool == "edit":
        old = str(arguments.get("old_string", "")).splitlines()
        new = str(arguments.get("new_string", "")).splitlines()
        return _cap(list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", lineterm="")))
    if tool == "write":
        content = str(arguments.get("content", "")).splitlines()
        return _cap(list(difflib.unified_diff([], content, "/dev/null", f"b/{path}", lineterm="")))
    if path:
        return path
    return ", ".join(f"{k}={str(v)[:60]}" for k, v in arguments.items())


def tool_title(tool: str, arguments: dict[str, Any]) -> str:
    """A short verb-target title, e.g. ``Running · pytest -q``."""
    target = str(arguments.get("command") or arguments.get("path") or arguments.get("pattern")
                 or arguments.get("query") or arguments.get("question") or "")
    target = target.splitlines()[0][:80] if target else ""
    verb = {"bash": "Running", "read": "Reading", "write": "Writing", "edit": "Editing", "glob": "Finding",
            "grep": "Searching", "ask_user": "Asking", "tool_search": "Loading tools"}.get(tool, tool)
    return f"{verb} · {target}" if target else verb


def _cap(lines: list[str]) -> str:
    if len(lines) > MAX_PREVIEW_LINES:
        cut = len(lines) - MAX_PREVIEW_LINES
        lines = [*lines[:MAX_PREVIEW_LINES], f"... {cut} more line(s)"]
    return "\n".join(lines)
