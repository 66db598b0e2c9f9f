"""A request must offer every tool its system message or an earlier tool result tells the model to
call (the model keeps to its offered tools; naming one it cannot call wastes a step at best).

Tool names are recognised exactly: the loop's multi-word names (``tool_search``, ``subagent_apply``,
...), whose spelling no prose uses, plus ``skill`` whenever a ``<skills>`` catalog is shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

LOOP_TOOL_NAMES = frozenset({
    "tool_search", "todo_write", "ask_user", "memory_search", "memory_write", "mcp_call", "mcp_describe",
    "subagent_apply", "history_search", "acceptance_propose", "skill_propose", "job_start", "job_output",
    "job_list", "job_stop",
})
_NAME = re.compile(r"(?<![\w./-])([a-z]+(?:_[a-z]+)+)(?![\w/-])")


def named_tools(text: str, known: Iterable[str]) -> set[str]:
    """The tool names among ``known`` that ``text`` mentions."""
    wanted = set(known)
    found = {m.group(1) for m in _NAME.finditer(text) if m.group(1) in wanted}
    if "<skills>" in text:
        found.add("skill")
    return found


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def missing_tools(body: Mapping[str, Any], known: Iterable[str] = LOOP_TOOL_NAMES) -> dict[str, set[str]]:
    """Per place (``system``, ``tool result N``): the tools it names that ``body`` does not offer."""
    messages = body.get("messages") or []
    offered = {str(t.get("function", {}).get("name", "")) for t in body.get("tools") or []}
    problems: dict[str, set[str]] = {}
    if not offered:  # a step that withholds every tool asks for a text answer (the search-stall ladder's end)
        return problems
    for n, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "tool"):
            continue
        text = _text(message.get("content"))
        if role == "tool":  # the volatile tail appended to the last one is the loop's, not a tool's word
            text = text.split("\n\n<", 1)[0] if n == len(messages) - 1 else text
        gaps = named_tools(text, known) - offered
        if gaps:
            problems["system" if role == "system" else f"tool result {n}"] = gaps
    return problems
