"""The loop keeps the layered config of a bounded number of workspaces (services.loop.main.WorkspaceDeps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.kernel.config import Config


def test_the_configs_kept_are_bounded_and_the_most_recently_used_stay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from services.loop import main

    monkeypatch.setattr(main, "MAX_WORKSPACE_CONFIGS", 2)
    base = Config(data={"models": {"fake": {"provider": "generic", "base_url": "http://127.0.0.1:9/v1",
                                            "api_key": "k", "model": "fake-model"}},
                        "default_model": "fake", "loop": {"memory": False, "mcp": False}})
    deps_for = main.WorkspaceDeps(base, main.build_deps(base))
    spaces = []
    for name in ("one", "two", "three"):
        (tmp_path / name).mkdir()
        spaces.append(str(tmp_path / name))
    first, _ = deps_for(spaces[0])
    second, _ = deps_for(spaces[1])
    assert deps_for(spaces[0])[0] is first  # a hit, and now the most recently used
    deps_for(spaces[2])  # over the bound: the least recently used (two) goes
    assert deps_for(spaces[0])[0] is first
    assert len(deps_for._cache) == 2 and all(key[0] != spaces[1] for key in deps_for._cache)
    assert deps_for(spaces[1])[0] is not second  # a dropped one is built again when asked for
