"""Checkpoint cost on a generated repository, through the real tool service over gRPC.

    .venv/bin/python bench/checkpoints.py [--files 10000] [--mb 100] [--runs 60]

Generates a repository of 10,000 files / 100 MB in a temp dir, then prints, each next to its
target: the first checkpoint (every file read and stored), p50/p95 of a checkpoint after a step
that changed 1, 10 and 1,000 files (target: p95 < 50 ms for 10 files on 2 cores), a rewind of
1,000 files, and the store's size after 200 steps of 10 changed files each. The store lives in a
throwaway HOME, like the workspace. The load average comes first: a busy machine is slower.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent.parent / "protos")]

from ai_coding.v1 import tools_pb2  # noqa: E402

from services.kernel.config import Config  # noqa: E402
from tests.support.tools_harness import ThreadedToolService  # noqa: E402


def generate(root: Path, files: int, total_mb: int) -> list[Path]:
    size = total_mb * 1024 * 1024 // files
    rng = random.Random(7)
    paths = []
    for i in range(files):
        folder = root / f"pkg{i % 100:02d}" / f"sub{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"mod{i:05d}.py"
        path.write_bytes(rng.randbytes(size))
        paths.append(path)
    return paths


def touch(paths: list[Path], count: int, rng: random.Random) -> None:
    for path in rng.sample(paths, count):
        path.write_bytes(rng.randbytes(1024) + path.read_bytes()[1024:])


def stats(samples: list[float]) -> tuple[float, float]:
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.95))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--steps", type=int, default=200)
    opts = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="aic-bench-", dir="/tmp") as tmp:
        base = Path(tmp)
        os.environ.update(HOME=str(base / "home"), XDG_DATA_HOME=str(base / "home" / "data"))
        workspace = base / "ws"
        workspace.mkdir()
        started = time.perf_counter()
        paths = generate(workspace, opts.files, opts.mb)
        print(f"generated {opts.files:,} files / {opts.mb} MB in {time.perf_counter() - started:.1f} s")
        svc = ThreadedToolService(Config(data={"tools": {}}), str(base / "t.sock")).start()
        try:
            svc.open("s1", str(workspace))

            def checkpoint(label: str) -> tuple[float, tools_pb2.CheckpointInfo]:
                t0 = time.perf_counter()
                info = svc.stub.CreateCheckpoint(tools_pb2.CreateCheckpointRequest(session_id="s1", label=label),
                                                 timeout=600)
                return (time.perf_counter() - t0) * 1000, info

            first_ms, first = checkpoint("first")
            print(f"first checkpoint ({first.files:,} files read and stored): {first_ms:,.0f} ms"
                  "   target: a one-off, seconds not minutes")
            rng = random.Random(11)
            for count, target in ((1, "p95 < 50 ms"), (10, "p95 < 50 ms"), (1000, "p95 < 500 ms")):
                runs = opts.runs if count < 1000 else max(5, opts.runs // 3)
                samples = []
                for i in range(runs):
                    touch(paths, count, rng)
                    ms, info = checkpoint(f"{count}-{i}")
                    assert info.files_read == count, (info.files_read, count)
                    samples.append(ms)
                p50, p95 = stats(samples)
                print(f"checkpoint after {count:>5,} changed files: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms"
                      f"   target: {target}  ({runs} runs)")
            _, before = checkpoint("before rewind")
            touch(paths, 1000, rng)
            checkpoint("after 1000 changes")
            t0 = time.perf_counter()
            report = svc.stub.RestoreCheckpoint(tools_pb2.RestoreCheckpointRequest(
                session_id="s1", checkpoint_id=before.checkpoint_id), timeout=600)
            rewind_ms = (time.perf_counter() - t0) * 1000
            print(f"rewind of {report.written:,} files: {rewind_ms:,.0f} ms   target: < 2,000 ms")
            workspace_bytes = sum(p.stat().st_size for p in paths)
            start_bytes = svc.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(session_id="s1")).store_bytes
            for i in range(opts.steps):
                touch(paths, 10, rng)
                checkpoint(f"step {i}")
            listed = svc.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(session_id="s1"))
            print(f"store after {opts.steps} more steps of 10 changed files ({len(listed.checkpoints)} checkpoints): "
                  f"{listed.store_bytes / 1e6:,.1f} MB for a {workspace_bytes / 1e6:,.1f} MB workspace, "
                  f"the {opts.steps} steps adding {(listed.store_bytes - start_bytes) / 1e6:,.1f} MB"
                  f" (their changed files: {opts.steps * 10 * workspace_bytes / len(paths) / 1e6:,.1f} MB)"
                  "   target: what changed, not the tree (cap tools.checkpoints.max_store_mb, default 2,048)")
        finally:
            svc.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
