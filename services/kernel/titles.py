"""The short verb-target title of a tool call, e.g. ``Running · pytest -q``.

One function for the loop (the title it puts on ``ToolStarted``) and the client (a saved
call redrawn by ``/resume``, an event that came without a title). Stdlib only: the client
imports it on its fast paths.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

# What each built-in tool does to its target, as the user reads it.
VERBS = {
    "bash": "Running", "read": "Reading", "write": "Writing", "edit": "Editing", "glob": "Finding",
    "grep": "Searching", "ask_user": "Asking", "tool_search": "Loading tools",
}
# Argument names that hold a call's target, first present wins (MCP tools use the same names).
TARGET_KEYS = ("command", "path", "file_path", "pattern", "query", "question")
# A target longer than this is cut with "…".
TARGET_CHARS = 80


def tool_title(tool: str, arguments: Mapping[str, object] | str) -> str:
    """``Verb · target`` from the arguments (a dict, or their JSON text); the verb alone when
    there is no target, and the tool's own name when it has no verb."""
    args = _parse(arguments) if isinstance(arguments, str) else arguments
    verb = VERBS.get(tool, tool)
    raw = next((args[key] for key in TARGET_KEYS if args.get(key)), "")
    target = _first_line(str(raw))
    return f"{verb} · {target}" if target else verb


def _parse(arguments_json: str) -> Mapping[str, object]:
    try:
        parsed = json.loads(arguments_json) if arguments_json else {}
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _first_line(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped:
            return stripped if len(stripped) <= TARGET_CHARS else stripped[: TARGET_CHARS - 1] + "…"
    return ""
