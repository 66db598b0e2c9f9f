"""20 sessions on one tool service at once never see each other's output or file state."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.support.tools_harness import ThreadedToolService


def test_twenty_concurrent_sessions_never_mix_outputs_or_snapshots(
        make_service: Callable[..., ThreadedToolService], tmp_path: Path) -> None:
    svc = make_service()
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "common.txt").write_text("shared content\n")
    roots = []
    for i in range(20):
        root = tmp_path / f"ws{i}"
        root.mkdir()
        (root / "own.txt").write_text(f"own {i}\n")
        roots.append(root)
        svc.open(f"own-{i}", str(root))
        svc.open(f"shared-{i}", str(shared))

    def session(i: int) -> list[str]:
        problems = []
        sid = f"own-{i}"
        for round_ in range(3):
            token = f"session-{i}-round-{round_}"
            chunks, result = svc.call(sid, "bash", json.dumps({"command": f"echo {token}; sleep 0.05; cat own.txt"}),
                                      call_id=token)
            if result.output.split() != [*token.split(), "own", str(i)] or result.call_id != token:
                problems.append(f"{sid}: output {result.output!r}")
            if any(c.call_id != token or ("session-" in c.text and token not in c.text) for c in chunks):
                problems.append(f"{sid}: foreign chunk")
        read = svc.call(sid, "read", json.dumps({"path": "own.txt"}))[1]
        if f"own {i}" not in read.output:
            problems.append(f"{sid}: read {read.output!r}")
        edit = svc.call(sid, "edit", json.dumps({"path": "own.txt", "old_string": f"own {i}",
                                                 "new_string": f"edited {i}"}))[1]
        if not edit.ok:
            problems.append(f"{sid}: edit {edit.error.code}")
        # Only even sessions read the shared file: odd ones must still be "never read".
        if i % 2 == 0:
            svc.call(f"shared-{i}", "read", json.dumps({"path": "common.txt"}))
        write = svc.call(f"shared-{i}", "write", json.dumps({"path": "common.txt", "content": f"by {i}\n"}))[1]
        expected = {"", "stale_read"} if i % 2 == 0 else {"never_read"}
        if write.error.code not in expected:
            problems.append(f"shared-{i}: write got {write.error.code!r}, expected one of {expected}")
        return problems

    with ThreadPoolExecutor(max_workers=20) as pool:
        problems = [p for found in pool.map(session, range(20)) for p in found]
    assert problems == []
    for i, root in enumerate(roots):
        assert (root / "own.txt").read_text() == f"edited {i}\n"


def test_parallel_edits_in_one_session_never_lose_an_update(
        make_service: Callable[..., ThreadedToolService], tmp_path: Path) -> None:
    svc = make_service()
    root = tmp_path / "ws"
    root.mkdir()
    target = root / "many.txt"
    target.write_text("".join(f"token{i}\n" for i in range(12)))
    svc.open("s", str(root))
    svc.call("s", "read", json.dumps({"path": "many.txt"}))

    def edit(i: int) -> str:
        result = svc.call("s", "edit", json.dumps({"path": "many.txt", "old_string": f"token{i}\n",
                                                   "new_string": f"done{i}\n"}), call_id=f"e{i}")[1]
        return result.error.code

    with ThreadPoolExecutor(max_workers=12) as pool:
        codes = list(pool.map(edit, range(12)))
    assert codes == [""] * 12
    assert target.read_text() == "".join(f"done{i}\n" for i in range(12))
