"""Render the budgeted MCP catalog text the loop puts in its system message.

Pure: entries in, text out. Every tool is always named (and each server's instructions follow, cut to
``INSTRUCTIONS_LIMIT``); how much more each gets depends on
what fits in ``TOTAL_LIMIT`` characters, the same tier for the whole catalog (so the text only
changes when the tool set does):

1. ``full``: one line per tool with its argument signature and description (cut to
   ``DESCRIPTION_LIMIT``);
2. ``short``: one line per tool with a shorter description (``SHORT_LIMIT``), no signature;
3. ``names``: one line per server naming its tools. Past the limit the names are still all there:
   a tool the model cannot see is a tool it cannot use.

``mcp_describe(server)`` lists one server's tools with the full-tier lines, and
``mcp_describe(server, tool)`` gives one tool's whole description and schema: details on demand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

DESCRIPTION_LIMIT = 120
SHORT_LIMIT = 50
# About a fifth of a first request with six servers connected (tests/e2e/test_loop_mcp_catalog_budget.py).
TOTAL_LIMIT = 2_000
SIGNATURE_LIMIT = 160
INSTRUCTIONS_LIMIT = 400
INSTRUCTIONS_HEADER = "What the servers say about using them:"

HEADER = ("MCP tools (call with mcp_call(server, tool, input); mcp_describe(server, tool) shows the full "
          "description and schema; mcp_resources(server) lists a server's resources; * = required):")
NAMES_HEADER = ("MCP tools by server (call with mcp_call(server, tool, input); mcp_describe(server) lists a "
                "server's tools with their arguments and purpose, mcp_describe(server, tool) one tool's full "
                "description and schema; mcp_resources(server) lists a server's resources):")


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


def short_line(entry: ToolEntry) -> str:
    """``- server__tool: short description`` (the ``short`` tier)."""
    return f"- {entry.qualified_name}: {shorten(entry.description, SHORT_LIMIT)}".rstrip(": ")


def server_lines(entries: Iterable[ToolEntry]) -> list[str]:
    """``- server: tool_a, tool_b`` per server, in the order the servers first appear."""
    by_server: dict[str, list[str]] = {}
    for entry in entries:
        by_server.setdefault(entry.server, []).append(entry.tool)
    return [f"- {server}: {', '.join(tools)}" for server, tools in by_server.items()]


def instruction_lines(instructions: Mapping[str, str]) -> list[str]:
    """What servers said about using them (``initialize`` instructions), each cut to
    ``INSTRUCTIONS_LIMIT``; they come after the tools and do not count against the tools' budget."""
    lines = [f"- {server}: {shorten(text, INSTRUCTIONS_LIMIT)}" for server, text in instructions.items()
             if text.strip()]
    return [INSTRUCTIONS_HEADER, *lines] if lines else []


def render_catalog(entries: Iterable[ToolEntry], total_limit: int = TOTAL_LIMIT,
                   instructions: Mapping[str, str] | None = None) -> tuple[str, list[ToolEntry]]:
    """The catalog text (empty when there are no tools) and the entries it names (all of them).

    The richest tier whose text fits ``total_limit``; the ``names`` tier otherwise, whatever its size.
    """
    items = list(entries)
    if not items:
        return "", []
    notes = instruction_lines(instructions or {})
    for lines in ([HEADER, *map(catalog_line, items)], [HEADER, *map(short_line, items)]):
        text = "\n".join(lines)
        if len(text) <= total_limit:
            return "\n".join([text, *notes]), items
    return "\n".join([NAMES_HEADER, *server_lines(items), *notes]), items


def server_listing(server: str, entries: Iterable[ToolEntry]) -> str:
    """What ``mcp_describe(server)`` answers: that server's tools, one full-tier line each."""
    lines = [catalog_line(e) for e in entries if e.server == server]
    return f"{server}: {len(lines)} tools (* = required)\n" + "\n".join(lines)
