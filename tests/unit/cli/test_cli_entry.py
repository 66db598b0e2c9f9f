"""The console script answers ``--version`` and ``serve NAME`` itself, and hands every other
command line to the typer app unchanged."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clients.cli.entry import exit_status, fast_path


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


def _entry(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` and then the console script's main with ``args``, in a fresh interpreter."""
    launch = f"{code}\nimport sys\nsys.argv = ['ai-coding', *{list(args)!r}]\nfrom clients.cli.entry import main\nmain()"
    return subprocess.run([sys.executable, "-c", launch], capture_output=True, text=True, timeout=60, check=False)


def test_a_command_that_returns_still_runs_the_atexit_handlers_and_flushes_its_output(tmp_path: Path) -> None:
    mark = tmp_path / "atexit-ran"
    done = _entry(f"import atexit, pathlib\natexit.register(pathlib.Path({str(mark)!r}).write_text, 'yes')",
                  "--help")
    full = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['ai-coding', '--help']\n"
                           "from clients.cli.main import main\nmain()"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == full.stdout and mark.read_text() == "yes"


def test_a_failing_command_keeps_its_exit_status_and_its_message() -> None:
    done = _entry("", "run", "--timeout", "-1", "x")
    assert done.returncode == 2 and "--timeout -1 is negative" in done.stderr


def test_a_thread_of_the_command_still_running_is_waited_for(tmp_path: Path) -> None:
    mark = tmp_path / "thread-finished"
    code = ("import threading, time, pathlib\n"
            f"threading.Thread(target=lambda: (time.sleep(0.5), pathlib.Path({str(mark)!r}).write_text('done'))).start()")
    done = _entry(code, "--help")
    assert done.returncode == 0 and mark.read_text() == "done"


def test_a_command_starts_without_the_collector_and_gets_it_back_with_its_start_frozen() -> None:
    code = textwrap.dedent("""
        import gc, json, sys, time
        from clients.cli import entry
        from clients.cli.runtime import wait_until
        before = gc.isenabled()
        entry.pause_gc_for_start(0.3)
        paused = not gc.isenabled() and gc.get_freeze_count() == 0
        back = wait_until(gc.isenabled, 30)
        print(json.dumps([before, paused, back, gc.get_freeze_count() > 1000]))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[true, true, true, true]"


def test_the_full_command_line_runs_inside_the_pause(tmp_path: Path) -> None:
    """What the console script does for a command the typer app answers (not --version, not serve)."""
    mark = tmp_path / "gc-at-start"
    code = (f"import gc, pathlib, clients.cli.main as m\nold = m.main\n"
            f"m.main = lambda: (pathlib.Path({str(mark)!r}).write_text(str(gc.isenabled())), old())")
    done = _entry(code, "--help")
    assert done.returncode == 0 and mark.read_text() == "False"


@pytest.mark.parametrize(("code", "status", "printed"), [
    (None, 0, ""), (0, 0, ""), (3, 3, ""), ("no workspace", 1, "no workspace\n"),
])
def test_the_exit_status_is_the_one_sys_exit_gives(code: object, status: int, printed: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_status(code) == status
    assert capsys.readouterr().err == printed
