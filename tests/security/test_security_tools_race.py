"""write/edit against a directory a background job keeps swapping for a symlink to outside.

The job runs in the sandbox (job_start), the writes go over gRPC: the same parts as a model's
calls. Every directory the tool creates is made relative to an open descriptor of its parent,
so a symlink swapped in after the path check is never followed: nothing appears outside.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support.tools_harness import ThreadedToolService

# renameat2(RENAME_EXCHANGE) swaps the two names atomically: "flip" is always there, a real
# directory one moment and a symlink to outside the next.
FLIPPER = r"""python3 - <<'PYEOF'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
os.makedirs("flip", exist_ok=True)
os.symlink({outside!r}, "flip.link")
open("flipper.started", "w").close()
while True:
    libc.renameat2(AT_FDCWD, b"flip", AT_FDCWD, b"flip.link", RENAME_EXCHANGE)
PYEOF"""

ITERATIONS = 400


@pytest.mark.slow
def test_a_symlink_flipped_by_a_background_job_never_lets_write_or_edit_create_outside(
        service: ThreadedToolService, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    _, started = service.call("s1", "job_start", json.dumps({"command": FLIPPER.format(outside=str(outside))}))
    assert started.ok, started.output
    deadline = time.monotonic() + 30
    while not (workspace / "flipper.started").exists():
        assert time.monotonic() < deadline, "the flipping job did not start"
        time.sleep(0.05)
    outcomes: dict[str, int] = {}
    for n in range(ITERATIONS):
        path = f"flip/new{n}/deeper/file.txt" if n % 2 else f"flip/file{n}.txt"
        _, result = service.call("s1", "write", json.dumps({"path": path, "content": "planted\n"}))
        key = "ok" if result.ok else result.error.code
        outcomes[key] = outcomes.get(key, 0) + 1
        if result.ok and n % 4 == 1:
            service.call("s1", "read", json.dumps({"path": path}))
            _, edited = service.call("s1", "edit", json.dumps(
                {"path": path, "old_string": "planted", "new_string": "edited"}))
            key = "edit ok" if edited.ok else f"edit {edited.error.code}"
            outcomes[key] = outcomes.get(key, 0) + 1
    service.call("s1", "job_stop", json.dumps({"job_id": json.loads(started.data_json)["job_id"]}))
    assert list(outside.iterdir()) == [], outcomes
    # The attack ran both ways: some writes landed in the real directory, some were refused.
    writes = {k: v for k, v in outcomes.items() if not k.startswith("edit")}
    assert sum(writes.values()) == ITERATIONS and writes.get("ok") and writes.get("path_outside_workspace"), outcomes
    assert set(writes) <= {"ok", "path_outside_workspace", "path_changed", "not_found"}, outcomes
