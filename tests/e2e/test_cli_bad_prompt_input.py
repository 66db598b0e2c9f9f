"""Bad prompt input is exit 2 with one line that says what to do: a 10 MB prompt on `run -`, and
bytes that are not UTF-8 on stdin (`run -`, `-p`) or in the argument (`-p`). Real services."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli_stack


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-badin-", [{"text": "fine", "repeat": "forever"}], ", max_retries: 0") as running:
        yield running


def _run(stack: Stack, args: list[str | bytes], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    return subprocess.run([sys.executable.encode(), b"-m", b"clients.cli.entry",
                           *(a if isinstance(a, bytes) else a.encode() for a in args)],
                          env={k.encode(): v.encode() for k, v in stack.env.items()}, cwd=workspace,
                          input=stdin, capture_output=True, timeout=180, check=False)


def test_a_10_mb_prompt_on_stdin_is_exit_2_with_the_size_named(stack: Stack) -> None:
    done = _run(stack, ["run", "-"], b"x" * 10_000_000)
    err = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, err)
    lines = [line for line in err.strip().splitlines() if not line.startswith("warning:")]
    assert len(lines) == 1 and "10,000,000 bytes" in lines[0] and "Traceback" not in err, err


@pytest.mark.parametrize("how", ["run -", "-p stdin", "-p argument"])
def test_a_prompt_that_is_not_utf8_is_exit_2_naming_the_byte(stack: Stack, how: str) -> None:
    bad = b"fix caf\xe9 now"
    if how == "run -":
        done = _run(stack, ["run", "-"], bad)
    elif how == "-p stdin":
        done = _run(stack, ["-p"], bad)
    else:
        done = _run(stack, [b"-p", bad], b"")
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 2, (done.returncode, err)
    assert "not UTF-8" in err and "0xe9" in err and "iconv" in err, err
    assert "UnicodeEncodeError" not in err and "unexpected error" not in err, err
    assert os.path.exists(stack.base)
