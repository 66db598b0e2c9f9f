"""Render the budgeted MCP catalog text the loop puts in its volatile tail.

Pure: entries in, text out. Each description is cut to ``DESCRIPTION_LIMIT``
characters and the whole text to ``TOTAL_LIMIT``; what does not fit is named
by count so the model knows tools were left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

DESCRIPTION_LIMIT = 120
TOTAL_LIMIT = 8_000
SIGNATURE_LIMIT = 160

HEADER = ("MCP tools (call with mcp_call(server, tool, input); mcp_describe(server, tool) shows the full "
          "description and schema; * = required):")


@dataclass(frozen=True)
class ToolEntry:
    """One remote tool as the gateway knows it."""

    server: str
    tool: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool = False
    """The server marks the tool ``readOnlyHint`` (it changes nothing)."""

    @property
    def qualified_name(self) -> str:
        return f"{self.server}__{self.tool}"


def shorten(text: str, limit: int) -> str:
    """First ``limit`` characters of ``text`` on one line, ending in an ellipsis when cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def signature(schema: Mapping[str, Any]) -> str:
    """``a*: number, b*: number`` from a JSON schema's properties (bounded)."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return ""
    required = schema.get("required")
    req = set(required) if isinstance(required, list) else set()
    parts = []
    for name, spec in props.items():
        kind = spec.get("type", "any") if isinstance(spec, Mapping) else "any"
        if isinstance(kind, list):
            kind = "|".join(str(k) for k in kind)
        parts.append(f"{name}{'*' if name in req else ''}: {kind}")
    return shorten(", ".join(parts), SIGNATURE_LIMIT)


def catalog_line(entry: ToolEntry) -> str:
    """``- server__tool(args): description`` with the description cut to the limit."""
    desc = shorten(entry.description, DESCRIPTION_LIMIT)
    return f"- {entry.qualified_name}({signature(entry.input_schema)}): {desc}".rstrip(": ")


def render_catalog(entries: Iterable[ToolEntry], total_limit: int = TOTAL_LIMIT) -> tuple[str, list[ToolEntry]]:
    """The catalog text (empty when there are no tools) and the entries it summarizes.

    Tools past the budget are named (not summarized) on a last line, up to ``NAMES_LIMIT``
    characters, so the model can still ask ``mcp_describe`` about them.
    """
    items = list(entries)
    if not items:
        return "", []
    lines = [HEADER]
    shown: list[ToolEntry] = []
    size = len(HEADER)
    for index, entry in enumerate(items):
        line = catalog_line(entry)
        left = len(items) - index - 1
        reserve = len(_overflow(items[index + 1:])) if left else 0
        if size + 1 + len(line) + reserve > total_limit:
            lines.append(_overflow(items[index:]))
            break
        lines.append(line)
        shown.append(entry)
        size += 1 + len(line)
    return "\n".join(lines), shown


NAMES_LIMIT = 400


def _overflow(rest: list[ToolEntry]) -> str:
    names = shorten(", ".join(e.qualified_name for e in rest), NAMES_LIMIT)
    return f"(… {len(rest)} more MCP tools not shown: over the catalog budget; names: {names})"
