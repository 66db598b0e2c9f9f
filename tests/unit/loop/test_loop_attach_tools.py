"""Opening a session registers it with the tools service and fetches the catalog in one round trip;
when a call fails the session still opens, with the first failure (in call order) as its warning."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from services.loop.session.runtime import SessionRuntime


class _Tools:
    def __init__(self, open_fails: str = "", list_fails: str = "") -> None:
        self.open_fails, self.list_fails = open_fails, list_fails
        self.in_flight = 0
        self.overlapped = False
        self.opened: list[tuple[str, str, list[str]]] = []

    async def _call(self, fails: str) -> None:
        self.in_flight += 1
        await asyncio.sleep(0.01)
        self.overlapped = self.overlapped or self.in_flight > 1
        self.in_flight -= 1
        if fails:
            raise RuntimeError(fails)

    async def open_session(self, session_id: str, workspace: str, secret_env_names: list[str]) -> list[str]:
        await self._call(self.open_fails)
        self.opened.append((session_id, workspace, secret_env_names))
        return ["sandbox: no network"]

    async def list_tools(self, session_id: str) -> list[str]:
        await self._call(self.list_fails)
        return ["read", "bash"]


def _attach(tools: _Tools) -> Any:
    remote: list[Any] = []
    rt: Any = SimpleNamespace(deps=SimpleNamespace(tools=tools, secret_env_names=["API_KEY"]),
                              session=SimpleNamespace(id="s1", workspace="/ws"), tool_warnings=[], warnings=[],
                              tools_attached=False, tools=SimpleNamespace(set_remote=remote.append), remote=remote)
    asyncio.run(SessionRuntime.attach_tools(rt))
    return rt


def test_the_session_is_opened_and_the_catalog_fetched_at_once() -> None:
    tools = _Tools()
    rt = _attach(tools)
    assert tools.overlapped and tools.opened == [("s1", "/ws", ["API_KEY"])]
    assert rt.tools_attached and rt.remote == [["read", "bash"]]
    assert rt.tool_warnings == [("sandbox", "sandbox: no network")] and rt.warnings == ["sandbox: no network"]


@pytest.mark.parametrize(("open_fails", "list_fails", "said"), [
    ("cannot open", "", "cannot open"),
    ("", "cannot list", "cannot list"),
    ("cannot open", "cannot list", "cannot open"),
])
def test_a_failed_call_leaves_the_tools_unattached_with_the_first_failure(open_fails: str, list_fails: str,
                                                                          said: str) -> None:
    rt = _attach(_Tools(open_fails, list_fails))
    assert not rt.tools_attached and rt.remote == []
    assert rt.tool_warnings == [("tools", f"tools unavailable: {said}")] and rt.warnings == [f"tools unavailable: {said}"]
