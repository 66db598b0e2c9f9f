"""Fixtures shared by every test layer: they build real things, never patch."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import services.kernel  # noqa: F401  (first: gRPC's fork handlers off; tests fork with gRPC live)
from tests.support import run_checks


def pytest_configure(config: pytest.Config) -> None:
    run_checks.register(config)
    # Each pytest process (each xdist worker too) gets a private XDG_RUNTIME_DIR: a test that starts
    # services without its own AI_CODING_RUNTIME_DIR must not reach the default runtime dir, which
    # another worker, another checkout's run or the user's own services share.
    private = Path(tempfile.mkdtemp(prefix="aic-xdg-", dir="/tmp"))
    os.chmod(private, 0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(private)
    config.add_cleanup(lambda: shutil.rmtree(private, ignore_errors=True))


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short private directory under /tmp (Unix socket paths must stay under 108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="aic-", dir="/tmp"))
    os.chmod(path, 0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def isolated_home(tmp_path: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME, XDG dirs and the runtime dir point into throwaway folders for this test."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("AI_CODING_RUNTIME_DIR", str(short_dir / "run"))
    for var in ("AI_CODING_CONFIG", "AI_CODING_TRUST_PROJECT", "AI_CODING_MODEL", "AI_CODING_BASE_URL",
                "AI_CODING_API_KEY", "AI_CODING_PROVIDER", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home
