"""The console script answers ``--version`` and ``serve NAME`` itself, and hands every other
command line to the typer app unchanged."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clients.cli.entry import fast_path


@pytest.mark.parametrize(("args", "how"), [
    (["--version"], "version"), (["-V"], "version"), (["serve", "loop"], "serve"),
    (["serve", "mcp_gateway"], "serve"), (["serve", "lopo"], ""), (["serve"], ""),
    (["-w", "x", "serve", "loop"], ""), (["--version", "run"], ""), (["run", "--version"], ""), ([], ""),
])
def test_only_the_exact_two_commands_take_the_fast_path(args: list[str], how: str) -> None:
    assert fast_path(args) == how


def test_an_unknown_service_still_gets_the_full_apps_one_line_error() -> None:
    done = subprocess.run([sys.executable, "-m", "clients.cli.entry", "serve", "lopo"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2 and "unknown service 'lopo'" in done.stderr


def test_version_from_the_entry_module_matches_the_full_apps() -> None:
    fast = subprocess.run([sys.executable, "-m", "clients.cli.entry", "--version"], capture_output=True, text=True,
                          timeout=60, check=True).stdout
    full = subprocess.run([sys.executable, "-m", "clients.cli.main", "--version"], capture_output=True, text=True,
                          timeout=60, check=True).stdout
    assert fast == full and fast.startswith("ai-coding ")
