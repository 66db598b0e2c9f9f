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

MAX_QUERY_CHARS = 4096


class ToolRegistry:
    """Tools by name, in the order they are sent to the model (remote first, then the loop's)."""

    def __init__(self, local: Iterable[ToolDef] = ()) -> None:
        self._remote: dict[str, ToolDef] = {}
        self._local: dict[str, ToolDef] = {}
        self._extra: dict[str, ToolDef] = {}
        self._tools: dict[str, ToolDef] = {}
        self.loaded: set[str] = set()
        """Deferred tools loaded (by ``tool_search``, by naming them, or by the step that makes them relevant)."""
        self._load_order: list[str] = []
        self._loads_at: dict[int, list[str]] = {}
        """What was loaded at the end of each turn of this process (a conversation rewind goes back to one)."""
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
        """What the model is offered this step: non-deferred tools, then the loaded deferred ones in the
        order they were loaded, so a load only appends (the cached prefix of the tools breaks at the end)."""
        shown = [t for t in self._tools.values() if not t.deferred]
        return shown + [self._tools[n] for n in self._load_order if n in self._tools and self._tools[n].deferred]

    def load(self, names: Iterable[str]) -> None:
        for name in names:
            if name in self._tools and name not in self.loaded:
                self.loaded.add(name)
                self._load_order.append(name)

    def turn_ended(self, turn: int) -> None:
        """Remember what was loaded at the end of ``turn`` (for :meth:`rewind_to`)."""
        self._loads_at[turn] = list(self._load_order)

    def rewind_to(self, turn: int) -> None:
        """The conversation went back to the end of ``turn``: only what was loaded then stays loaded,
        in that order (a turn of another loop process is unknown: the loads stay as they are)."""
        if turn in self._loads_at:
            names = self._loads_at[turn]
            self.loaded, self._load_order = set(names), list(names)
        self._loads_at = {t: loads for t, loads in self._loads_at.items() if t <= turn}

    def search(self, query: str, limit: int = 5) -> list[ToolDef]:
        """Deferred tools ranked by how many query words their name and description contain."""
        # Distinct words, at most 64: a 10 MB query must not cost words x tools substring scans.
        words = list(dict.fromkeys(w for w in re.split(r"[^a-z0-9_]+", query[:MAX_QUERY_CHARS].lower()) if w))[:64]
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
