"""A full disk (a real tmpfs filled to ENOSPC) under compaction's transcripts: the turn completes, and
the Degraded event names the disk, the path and what to free, instead of `internal_error: OSError`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from services.fake_model import FakeModelServer
from tests.e2e.test_loop_compaction import BIG_OUTPUT, INSTRUCTION, bash_step, long_stack, summary_step
from tests.service.loop.harness import LoopStack, fake, finished, status_name, workspace

__all__ = ["fake", "long_stack", "workspace"]


def _mount_tmpfs(where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")


def _fill(where: Path) -> None:
    with open(where / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"x" * 4096)
        except OSError:
            pass
    with pytest.raises(OSError):
        (where / "probe").write_bytes(b"y" * 8192)


@pytest.fixture
def full_disk_at() -> Iterator[Callable[[Path], None]]:
    mounted: list[Path] = []

    def mount(where: Path) -> None:
        _mount_tmpfs(where)
        mounted.append(where)
        _fill(where)

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_compaction_on_a_full_disk_completes_the_turn_and_names_the_disk(
        long_stack: Callable[..., LoopStack], fake: FakeModelServer, workspace: Path,
        full_disk_at: Callable[[Path], None]) -> None:
    transcripts = workspace / ".ai-coding" / "transcripts"
    full_disk_at(transcripts)
    os.chmod(workspace / ".ai-coding", 0o700)
    stack = long_stack([summary_step(), bash_step(BIG_OUTPUT, repeat=6), {"text": "Refactor finished."}])
    sid, events = stack.turn(INSTRUCTION)
    end = finished(events)
    assert status_name(end) == "completed", end
    ended = [e for e in events if e.WhichOneof("event") == "compaction_ended"]
    assert ended, "the script is meant to compact"
    degraded = [e.degraded.reason for e in events if e.WhichOneof("event") == "degraded"
                and e.degraded.component == "compaction"]
    assert degraded, [e.WhichOneof("event") for e in events]
    assert any("is full (ENOSPC)" in r and str(transcripts) in r and "free space there" in r for r in degraded), \
        degraded
