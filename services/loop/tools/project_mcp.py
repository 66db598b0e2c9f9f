"""A workspace's ``.mcp.json`` (Claude Code's file) at OpenSession: its servers go to the gateway
only when the user trusts the project; otherwise one warning names the file.

The gateway has no workspace of its own: the loop, which opens sessions per workspace, reads the
file (services/mcp_gateway/project.py converts it) and registers each server with AddServer's
``project_source`` (kept for the gateway's run, never written to the user's sidecar; a name the
user configured wins). Every OpenSession of a trusted project registers again (a restarted
gateway gets them back; one already there is left alone); warnings are said once per workspace
for as long as the loop runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from services.kernel.config import TRUST_ENV, project_trusted
from services.loop.core.errors import AuxiliaryError
from services.loop.core.ports import McpClient
from services.mcp_gateway.project import project_file, read_project_servers

REGISTER_TIMEOUT_S = 10.0


class ProjectServers:
    """Registers each workspace's .mcp.json servers with the gateway (trusted projects only)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ
        self._said: set[str] = set()

    async def open(self, mcp: McpClient | None, workspace: str) -> list[str]:
        """Warnings for this OpenSession (each said once)."""
        path = project_file(workspace)
        if mcp is None or not path.is_file():
            return []
        if not project_trusted(self._environ):
            return self._once([f"{path}: its MCP servers were not started (a repository's file can run any "
                               f"program); export {TRUST_ENV}=1 to trust this project and use them"])
        entries, problems = read_project_servers(path)
        for entry in entries:
            try:
                problem = await mcp.add_project_server(entry, str(path), REGISTER_TIMEOUT_S)
            except AuxiliaryError as err:
                problems.append(f"{path}: the MCP gateway did not take its servers ({err.detail})")
                break
            if problem:
                problems.append(f"{path}: server {entry['name']!r} left out: {problem}")
        return self._once(problems)

    def _once(self, warnings: list[str]) -> list[str]:
        new = [w for w in warnings if w not in self._said]
        self._said.update(new)
        return new
