"""A workspace's ``.mcp.json`` (Claude Code's file) at OpenSession: each server goes to the gateway
only as the user approved it for this workspace (``ai-coding trust``, services/kernel/trust.py);
a server added or changed since is left out with a warning naming it and how to approve it.

The gateway has no workspace of its own: the loop, which opens sessions per workspace, reads the
file (services/mcp_gateway/project.py converts it) and registers each server with AddServer's
``project_source`` (kept for the gateway's run, never written to the user's sidecar; a name the
user configured wins). Every OpenSession registers the approved ones again (a restarted
gateway gets them back; one already there is left alone); warnings are said once per workspace
for as long as the loop runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.kernel.trust import Item, TrustStore, approve_hint, mcp_json_key
from services.loop.core.errors import AuxiliaryError
from services.loop.core.ports import McpClient
from services.mcp_gateway.project import project_file, read_project_servers

REGISTER_TIMEOUT_S = 10.0


class ProjectServers:
    """Registers each workspace's .mcp.json servers with the gateway (those the user approved)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ
        self._said: set[str] = set()

    async def open(self, mcp: McpClient | None, workspace: str, environ: Mapping[str, str] | None = None
                   ) -> list[str]:
        """Warnings for this OpenSession (each said once); ``environ``: the session's environment (the
        client's AI_CODING_TRUST_PROJECT, services.kernel.invocation), else the service's."""
        path = project_file(workspace)
        if mcp is None or not path.is_file():
            return []
        entries, problems = read_project_servers(path, self._admit(workspace, path))
        for entry in entries:
            try:
                problem = await mcp.add_project_server(entry, str(path), REGISTER_TIMEOUT_S)
            except AuxiliaryError as err:
                problems.append(f"{path}: the MCP gateway did not take its servers ({err.detail})")
                break
            if problem:
                problems.append(f"{path}: server {entry['name']!r} left out: {problem}")
        return self._once(problems)

    def _admit(self, workspace: str, path: Path) -> Any:
        store = TrustStore.load(self._environ)

        def admit(name: str, spec: Any) -> str:
            pending = store.check(workspace, Item(mcp_json_key(path, name), spec))
            if pending is None:
                return ""
            why = "changed since you approved it" if pending.known else "not approved for this workspace"
            return f"{why} (a repository's file can run any program); {approve_hint(workspace)}"

        return admit

    def _once(self, warnings: list[str]) -> list[str]:
        new = [w for w in warnings if w not in self._said]
        self._said.update(new)
        return new
