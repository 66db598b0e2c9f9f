"""The L2 static check runner: a linter that is missing or hangs is reported, never fatal."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from services.loop.policy.static_check import StaticCheckPlan
from services.loop.turn import static_check


def _linter(workspace: Path, body: str) -> None:
    path = workspace / ".venv" / "bin" / "ruff"
    path.parent.mkdir(parents=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_a_missing_linter_is_named_in_the_output(tmp_path: Path) -> None:
    out = asyncio.run(static_check.run_static_check(StaticCheckPlan([["ruff", "check", "."]]), str(tmp_path),
                                                    {"PATH": str(tmp_path / "empty")}))
    assert out.startswith("$ ruff check .\n(cannot run ruff:")


def test_a_hanging_linter_is_stopped_at_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _linter(tmp_path, "exec sleep 30")
    monkeypatch.setattr(static_check, "TIMEOUT_SECONDS", 0.3)
    out = asyncio.run(static_check.run_static_check(StaticCheckPlan([["ruff", "check"], ["ruff", "again"]]),
                                                    str(tmp_path), {"PATH": "/usr/bin:/bin"}))
    assert "$ ruff check\n(stopped after 0 s)" in out
    assert "$ ruff again\n(not run: the 0.3 s budget is spent)" in out


def test_clean_output_says_so_and_long_output_is_cut(tmp_path: Path) -> None:
    _linter(tmp_path, 'if [ "$1" = quiet ]; then exit 0; fi; yes E501 | head -c 5000')
    plan = StaticCheckPlan([["ruff", "quiet"], ["ruff", "loud"]])
    out = asyncio.run(static_check.run_static_check(plan, str(tmp_path), {"PATH": "/usr/bin:/bin"}))
    assert out.startswith("$ ruff quiet\n(no findings)\n$ ruff loud\nE501")
    assert len(out) < 2100 and "more characters]" in out
    assert asyncio.run(static_check.run_static_check(StaticCheckPlan(), str(tmp_path), {})) == ""
