"""The permission gate: a static ALLOW / WARN / DENY table plus the session's grants.

- ALLOW: tools-service tools that only read (read, glob, grep, job_output,
  job_list) and the loop's own tools whose registry entry declares ALLOW
  (todo_write, tool_search, ask_user, memory_*; ``trusted``).
- WARN (ask): write, edit, bash, mcp_call, and any tool not in the table.
- DENY: bash commands on the hard list (``command_policy.denied_reason``) or
  matching an operator ``bash_policy.deny`` pattern.

"Allow always" grants (per tool, or ``bash:<program>`` for a simple command;
a compound command passes when each of its programs is granted) turn WARN into
ALLOW for the rest of the session, except commands matching ``bash_policy.confirm``,
which always ask. ``declared`` is the level the owning service reports: its
"deny" always wins; its "allow" counts only for ``mcp_call`` (an auto_approve
MCP server, a user-layer setting); a tool cannot declare itself out of WARN. Mode ``auto`` allows every WARN; ``readonly`` denies writes
(including bash that writes files). Any exception inside the gate is a DENY
(fail closed).
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from services.loop.policy.guards import CompiledBashPolicy, check_bash_policy


class Level(StrEnum):
    """Gate levels, least strict first."""

    ALLOW = "allow"
    WARN = "warn"
    DENY = "deny"


# Tools-service tools that only read. The loop's own tools declare their level in the registry
# (ports.ToolDef.permission); a tool the loop does not know is not listed here and asks.
ALLOW_TOOLS = frozenset({"read", "glob", "grep", "job_output", "job_list"})
WARN_TOOLS = frozenset({"write", "edit", "bash", "mcp_call", "job_start", "job_stop", "webfetch", "websearch"})
WRITE_TOOLS = frozenset({"write", "edit"})


class PermissionMode(StrEnum):
    """How the gate treats a call that asks (``/permissions`` switches it)."""

    CONFIRM = "confirm"
    """Ask the user."""
    AUTO = "auto"
    """Allow what asks; what is denied stays denied."""
    READONLY = "readonly"
    """Refuse every write."""


MODES = tuple(m.value for m in PermissionMode)


@dataclass(frozen=True)
class Verdict:
    """The gate's answer and a sentence saying why."""

    level: Level
    reason: str
    grant_key: str = ""
    """What "allow always" would remember for this call ("" = cannot be granted)."""


def _programs(command: str) -> list[str]:
    """The program of each simple command in ``command`` ([] when it cannot be parsed)."""
    try:
        from services.kernel.command_policy import command_parts

        parts = command_parts(command)
    except Exception:
        return []
    return [posixpath.basename(p.argv[0]) if p.argv else "" for p in parts]


def _bash_verdict(command: str, grants: Collection[str], mode: PermissionMode, policy: CompiledBashPolicy) -> Verdict:
    from services.kernel.command_policy import denied_reason, writes_files

    reason = denied_reason(command)
    if reason:
        return Verdict(Level.DENY, f"refused: {reason}")
    kind, pattern = check_bash_policy(command, policy)
    if kind == "deny":
        return Verdict(Level.DENY, f"refused by bash_policy.deny ({pattern})")
    writes = writes_files(command)
    if mode == PermissionMode.READONLY and writes:
        return Verdict(Level.DENY, "read-only mode: this command writes files")
    if kind == "confirm":
        return Verdict(Level.WARN, f"bash_policy.confirm ({pattern}) always asks")
    programs = _programs(command)
    keys = [f"bash:{p}" for p in programs if p]
    if "bash" in grants or (keys and len(keys) == len(programs) and all(k in grants for k in keys)):
        return Verdict(Level.ALLOW, "allowed always this session")
    if mode == PermissionMode.AUTO:
        return Verdict(Level.ALLOW, "auto mode")
    # "Always" is offered per program for a simple command; a compound one is
    # allowed only once its every program has been granted on its own.
    key = keys[0] if len(keys) == 1 and len(programs) == 1 else ""
    return Verdict(Level.WARN, "writes files (treated as an edit)" if writes else "runs a command", key)


def decide_permission(
    tool: str,
    args: Mapping[str, Any],
    session_grants: Collection[str] = (),
    mode: PermissionMode = PermissionMode.CONFIRM,
    *,
    bash_policy: CompiledBashPolicy | None = None,
    declared: str = "",
    trusted: bool = False,
) -> Verdict:
    """ALLOW, WARN or DENY for one call; never raises (an internal error is a DENY).

    ``trusted``: ``declared`` comes from the loop's own tool registry (a tool the loop answers
    itself), so its ALLOW is taken as is."""
    try:
        return _decide(tool, args, session_grants, mode, bash_policy or CompiledBashPolicy(), declared, trusted)
    except Exception as exc:  # fail closed: a broken rule must not let a call through
        return Verdict(Level.DENY, f"the permission check failed ({type(exc).__name__}); refused")


def _decide(
    tool: str, args: Mapping[str, Any], grants: Collection[str], mode: PermissionMode, policy: CompiledBashPolicy, declared: str,
    trusted: bool = False,
) -> Verdict:
    if declared == "deny":
        return Verdict(Level.DENY, "denied by the tool's own policy")
    if trusted and declared == "allow":
        return Verdict(Level.ALLOW, "read-only or session tool")
    if tool == "bash":
        return _bash_verdict(str(args.get("command", "")), grants, mode, policy)
    if tool in ALLOW_TOOLS:
        return Verdict(Level.ALLOW, "read-only or session tool")
    if tool == "mcp_call" and declared == "allow":
        return Verdict(Level.ALLOW, "the MCP server is auto_approve")
    if mode == PermissionMode.READONLY and tool in WRITE_TOOLS:
        return Verdict(Level.DENY, "read-only mode: writes are refused")
    if tool in grants:
        return Verdict(Level.ALLOW, "allowed always this session", tool)
    if mode == PermissionMode.AUTO:
        return Verdict(Level.ALLOW, "auto mode")
    if tool in WARN_TOOLS:
        return Verdict(Level.WARN, "changes files or runs something", tool)
    return Verdict(Level.WARN, "unknown tool: asking to be safe", tool)


def mcp_gate(server: str, tool: str, server_levels: Mapping[str, str], mode: PermissionMode,
             grants: Collection[str]) -> Verdict:
    """The gate for ``mcp_call`` of ``tool`` on ``server`` (pure).

    ``server_levels`` maps ``server__tool`` to the level the server's own settings give it
    ("allow" / "warn" / "deny"; absent = "warn"). The server's deny beats its allow, which
    beats the session: read-only mode denies (a remote tool may change things), then an
    "always" answer (grant ``mcp:server__tool``) or auto mode allows, else it asks."""
    qualified = f"{server}__{tool}"
    level = server_levels.get(qualified, "warn")
    if level == "deny":
        return Verdict(Level.DENY, f"{qualified} is denied by the MCP server's permissions")
    if level == "allow":
        return Verdict(Level.ALLOW, "allowed by the MCP server's permissions")
    if mode == PermissionMode.READONLY:
        return Verdict(Level.DENY, "read-only mode: remote tools may change things")
    grant = f"mcp:{qualified}"
    if grant in grants:
        return Verdict(Level.ALLOW, "allowed always this session", grant)
    if mode == PermissionMode.AUTO:
        return Verdict(Level.ALLOW, "auto mode", grant)
    return Verdict(Level.WARN, "calls a tool on an MCP server", grant)
