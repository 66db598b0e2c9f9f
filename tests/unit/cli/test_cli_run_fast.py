"""``ai-coding run``'s fast path reads a command line as typer does, or leaves it to typer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer

from clients.cli import run_fast
from clients.cli.main import for_command_line
from clients.cli.run_command import RunOptions
from services.kernel.records import fields_of


def typer_reads(args: list[str]) -> RunOptions:
    """What typer's own parser makes of ``run ARGS`` (the command's parameters, nothing run)."""
    group = typer.main.get_command(for_command_line(["run", *args]))
    command = group.commands["run"]  # type: ignore[attr-defined]
    params = command.make_context("run", list(args)).params
    return RunOptions(**{f.name: params[f.name] for f in fields_of(RunOptions)})


@pytest.mark.parametrize("args", [
    [],
    ["fix the test"],
    ["-"],
    [""],
    ["--json", "--auto-approve", "fix it"],
    ["fix it", "-w", "/tmp/x", "--json"],  # an option after the prompt, as click allows
    ["-w", "ws", "-m", "big", "--timeout", "2.5", "-v", "go"],
    ["--workspace", "ws", "--model", "m", "--verbose", "--timeout", "10", "x"],
    ["--timeout", "1_000", "x"],
    ["--timeout", "0", "@notes.md summarize"],
    ["fix --json in the docs"],  # one word: a prompt, not an option
])
def test_each_plain_command_line_reads_as_typer_reads_it(args: list[str]) -> None:
    fast = run_fast.parse(args)
    assert fast is not None, args
    assert fast == typer_reads(args)


@pytest.mark.parametrize("args", [
    ["--help"], ["-h"], ["fix", "--help"],
    ["--json", "--json", "x"], ["-w", "a", "-w", "b", "x"],  # twice: typer's rule, not ours
    ["--workspace=ws", "x"], ["-wws", "x"], ["--", "--json"],
    ["one", "two"],  # typer says what a second prompt means
    ["-w"], ["-w", "--json", "x"], ["--timeout", "soon", "x"], ["--timeout", "nan", "x"], ["--timeout", "-1", "x"],
    ["-c", "x"], ["--continue", "x"], ["-r"], ["--resume", "abc", "x"], ["--session", "abc", "x"],
    ["--plan", "topic"], ["--frobnicate", "x"], ["-5"],
])
def test_everything_else_is_left_to_typer(args: list[str]) -> None:
    assert run_fast.parse(args) is None


def _both_paths(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], ...]:
    """``ai-coding ARGS`` as the console script runs it (the fast path) and through typer alone."""
    return tuple(subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=60,
                                cwd=cwd, stdin=subprocess.DEVNULL, check=False)
                 for module in ("clients.cli.entry", "clients.cli.main"))


@pytest.mark.parametrize("args", [
    ["run", "-w", "no-such-dir", "x"],
    ["run", ""],
    ["run", "--timeout", "-1", "x"],  # typer's path on both (the fast one leaves "-1" to it)
])
def test_a_usage_error_reads_and_exits_the_same_on_both_paths(args: list[str], isolated_home: Path,
                                                               tmp_path: Path) -> None:
    fast, full = _both_paths(args, tmp_path)
    assert (fast.returncode, fast.stdout, fast.stderr) == (full.returncode, full.stdout, full.stderr)
    assert fast.returncode == 2 and "ai-coding run: " in fast.stderr, fast.stderr
