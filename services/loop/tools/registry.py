"""The tools of one session: the tools service's and the loop's own, typed (``ports.ToolDef``).

One registry per session. ``set_remote`` takes the tools service's catalog
(on attach), ``set_local`` the loop's own tools (they depend on whether someone
can answer and which auxiliary services exist); a remote tool of the same
name wins, as the service that runs it knows it best. ``register`` adds one
tool on top (subagents, skills, plans, compaction's history_search): a
component that owns state registers a ``ToolDef`` whose handler is its bound
method. The dispatcher looks tools up here by name, and the pipeline sends
``visible()`` to the model each step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from services.loop.core.ports import ToolDef


class ToolRegistry:
    """Tools by name, in the order they are sent to the model (remote first, then the loop's)."""

    def __init__(self, local: Iterable[ToolDef] = ()) -> None:
        self._remote: dict[str, ToolDef] = {}
        self._local: dict[str, ToolDef] = {}
        self._extra: dict[str, ToolDef] = {}
        self._tools: dict[str, ToolDef] = {}
        self.loaded: set[str] = set()
        """Deferred tools the model loaded (via ``tool_search`` or by naming them)."""
        self.set_local(local)

    def set_remote(self, tools: Iterable[ToolDef]) -> None:
        self._remote = {t.name: t for t in tools}
        self._rebuild()

    def set_local(self, tools: Iterable[ToolDef]) -> None:
        self._local = {t.name: t for t in tools}
        self._rebuild()

    def register(self, tool: ToolDef) -> None:
        """Add (or replace) one tool for the rest of the session."""
        self._extra[tool.name] = tool
        self._rebuild()

    def unregister(self, name: str) -> None:
        self._extra.pop(name, None)
        self._rebuild()

    def _rebuild(self) -> None:
        tools = dict(self._remote)
        for layer in (self._local, self._extra):
            tools.update({n: t for n, t in layer.items() if n not in self._remote})
        self._tools = tools

    def get(self, name: str) -> ToolDef | None:
        return self._tools.get(name)

    def all(self) -> list[ToolDef]:
        return list(self._tools.values())

    def names(self) -> list[str]:
        """Every tool the model may call without loading it first, sorted (for error messages)."""
        return sorted(n for n, t in self._tools.items() if not t.deferred)

    def visible(self) -> list[ToolDef]:
        """What the model is offered this step: non-deferred tools plus deferred ones it loaded."""
        return [t for t in self._tools.values() if not t.deferred or t.name in self.loaded]

    def load(self, names: Iterable[str]) -> None:
        self.loaded.update(n for n in names if n in self._tools)

    def search(self, query: str, limit: int = 5) -> list[ToolDef]:
        """Deferred tools ranked by how many query words their name and description contain."""
        words = [w for w in re.split(r"[^a-z0-9_]+", query.lower()) if w]
        scored = []
        for tool in self._tools.values():
            if not tool.deferred:
                continue
            hay = f"{tool.name} {tool.description}".lower()
            score = sum(1 for w in words if w in hay)
            if score or not words:
                scored.append((score, tool.name, tool))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [tool for _, _, tool in scored[:limit]]
