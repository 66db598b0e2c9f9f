"""Memory notes and MCP servers as the client shows them: plain values.

:mod:`clients.cli.convert` builds them from the memory service's and the MCP gateway's answers;
stdlib only, like :mod:`clients.cli.views`.
"""

from __future__ import annotations

from dataclasses import field

from clients.cli.records import record


@record
class Note:
    """One memory note as stored: its text, kind, importance, scope, evidence and use counts."""

    id: str = ""
    text: str = ""
    kind: str = ""
    importance: int = 0
    pinned: bool = False
    scene: str = ""
    evidence: str = ""
    scope: str = ""
    source_message_ids: tuple[str, ...] = ()
    hits: int = 0
    last_used: float = 0.0
    created: float = 0.0
    updated: float = 0.0


@record
class RecallHit:
    """One note a recall found, with its score and the terms that matched."""

    note: Note = field(default_factory=Note)
    score: float = 0.0
    relevance: float = 0.0
    matched_terms: tuple[str, ...] = ()


@record
class Recall:
    """A recall's answer: the hits, the ranking's diagnostics (JSON) and the text the model would see."""

    hits: tuple[RecallHit, ...] = ()
    diagnostics_json: str = ""
    rendered: str = ""


@record
class ServerLogLine:
    """One line a server logged: an MCP log message, or (level ``stderr``) a local server's stderr."""

    level: str = ""
    logger: str = ""
    text: str = ""


@record
class ServerStatus:
    """One MCP server's state in the gateway: its tools, retries, degradation and newest log lines."""

    name: str = ""
    type: str = ""
    state: int = 0
    """The ``ServerState`` number (``services_view.state_name`` says it as a word)."""
    reason: str = ""
    tool_count: int = 0
    attempts: int = 0
    next_retry_in_s: float = 0.0
    auto_approve: bool = False
    degraded: bool = False
    degraded_reason: str = ""
    log: tuple[ServerLogLine, ...] = ()
    """The newest kept log lines, oldest first (only when they were asked for)."""
    session_id: str = ""
    """Non-empty: an editor's server, for that loop session alone (not in the user's config)."""


@record
class CatalogEntry:
    """One tool an MCP server offers the model: its qualified name, description, input schema and permission."""

    server: str = ""
    tool: str = ""
    qualified_name: str = ""
    description: str = ""
    input_schema_json: str = ""
    permission: str = ""
