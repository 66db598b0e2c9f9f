"""Permission level of one remote tool: a pure function the loop's gate calls.

Visibility is separate from permission: a denied tool stays in the catalog;
calling it is refused here. Order: deny beats allow beats an "always"
approval; everything else is WARN (ask) unless the server is ``auto_approve``
or the tool is marked ``readOnlyHint`` by a server whose hints are trusted
(``trust_read_only_hint``, on by default).
The loop must consult this before its "always allow" memory so a deny wins.
No SDK import: the loop imports this module.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Literal

from services.mcp_gateway.settings import ServerSettings

Level = Literal["allow", "warn", "deny"]


def _matches(patterns: tuple[str, ...], server: str, tool: str) -> bool:
    qualified = f"{server}__{tool}"
    return any(fnmatchcase(tool, p) or fnmatchcase(qualified, p) for p in patterns)


def mcp_permission(server_settings: ServerSettings, tool: str, read_only: bool = False) -> Level:
    """``deny`` if a deny pattern matches; ``allow`` if an allow pattern matches, the server is
    ``auto_approve``, or ``read_only`` (the tool's readOnlyHint) and the server's hints are
    trusted; otherwise ``warn`` (the loop asks the user)."""
    perms = server_settings.permissions
    name = server_settings.name
    if tool.startswith(f"{name}__"):
        tool = tool[len(name) + 2 :]
    if _matches(perms.deny, name, tool):
        return "deny"
    if _matches(perms.allow, name, tool) or server_settings.auto_approve:
        return "allow"
    if read_only and server_settings.trust_read_only_hint:
        return "allow"
    return "warn"
