"""A project's ``.mcp.json`` (Claude Code's file) as a project layer of MCP servers.

Claude Code keeps a repository's servers in ``<workspace>/.mcp.json``::

    {"mcpServers": {"db": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}},
                    "api": {"type": "http", "url": "https://x/mcp", "headers": {"A": "b"}}}}

A repository's file can name any program, so each server is used only as the user approved it for
the workspace (services/kernel/trust.py: bound to its command, arguments, URL and environment, as
for ai-coding.yaml's own ``mcp`` section); otherwise the loop says once which one was left out. The loop reads it at OpenSession and hands each entry to the
gateway's AddServer with ``project_source`` set: kept for the gateway's run, never written to the
user's sidecar, and a name the user already configured wins. Pure: no gRPC, no SDK.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

FILE_NAME = ".mcp.json"
# Our server names: letters, digits, '-', '_' (settings._NAME); anything else becomes '-'.
_BAD = re.compile(r"[^A-Za-z0-9_-]+")


def project_file(workspace: str | Path) -> Path:
    return Path(workspace) / FILE_NAME


def read_project_servers(path: Path, admit: Callable[[str, Any], str] | None = None
                         ) -> tuple[list[dict[str, Any]], list[str]]:
    """The file's servers as ``mcp.servers[]`` entries, and a sentence for each one left out;
    ``admit(name, spec)`` says why a server may not be used ("" = it may)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return [], [f"{path}: cannot read it ({exc}); fix or remove it"]
    except json.JSONDecodeError as exc:
        return [], [f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); fix it"]
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return [], [f"{path}: no `mcpServers` object; nothing to start"]
    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    for name, spec in servers.items():
        refused = admit(str(name), spec) if admit is not None else ""
        if refused:
            problems.append(f"{path}: server {name!r} not started: {refused}")
            continue
        entry, problem = to_entry(str(name), spec)
        if problem:
            problems.append(f"{path}: server {name!r} left out: {problem}")
        else:
            entries.append(entry)
    return entries, problems


def to_entry(name: str, spec: Any) -> tuple[dict[str, Any], str]:
    """One Claude Code server spec as our entry (or a problem): stdio, http (streamable) or sse."""
    if not isinstance(spec, dict):
        return {}, "its value must be an object"
    ours = _BAD.sub("-", name).replace("__", "_").strip("-")[:48] or "project"
    kind = str(spec.get("type") or ("stdio" if spec.get("command") else "http"))
    if kind == "stdio":
        command = spec.get("command")
        args = spec.get("args") or []
        if not isinstance(command, str) or not command or not isinstance(args, list):
            return {}, "a stdio server needs `command` (a string) and `args` (a list)"
        entry: dict[str, Any] = {"name": ours, "type": "local", "command": [command, *[str(a) for a in args]]}
        if isinstance(spec.get("env"), dict):
            entry["environment"] = {str(k): str(v) for k, v in spec["env"].items()}
        if isinstance(spec.get("cwd"), str):
            entry["cwd"] = spec["cwd"]
        return entry, ""
    if kind in ("http", "streamable-http", "streamable_http", "sse"):
        url = spec.get("url")
        if not isinstance(url, str) or not url:
            return {}, f"a {kind} server needs `url`"
        entry = {"name": ours, "type": "remote", "url": url,
                 "transport": "sse" if kind == "sse" else "streamable_http"}
        if isinstance(spec.get("headers"), dict):
            entry["headers"] = {str(k): str(v) for k, v in spec["headers"].items()}
        return entry, ""
    return {}, f"type {kind!r} is not stdio, http or sse"
