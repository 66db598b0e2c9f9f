"""Checkpoint cost on a generated repository, through the real tool service over gRPC.

    .venv/bin/python bench/checkpoints.py [--files 10000] [--mb 100] [--runs 60] [--base REV] [--pairs 1]

Generates a repository of 10,000 files / 100 MB in a temp dir, then prints, each next to its
target: the first checkpoint of a fresh service (from the session's opening, whose background
scan it waits for), p50/p95 of a checkpoint after a step that changed 1, 10 and 1,000 files
(target: p95 < 50 ms for 10 files on 2 cores), a rewind of 1,000 files (with the baseline the loop
passes), the store's size after 200 steps of 10 changed files each, and on a workspace of four
files: a checkpoint when nothing changed and a bash step with checkpoints on against one with
them off (each bash step takes two: before and after). The store lives in a throwaway HOME.
Beside the wall times: the process's CPU time (median, the service's threads and the client's),
which the machine's load moves much less (at a load of 15 on 2 cores, wall is ~7x cpu).

``--base REV`` runs the same measurements with that commit checked out in a temporary worktree
(bench/baseline.py), base and head alternating ``--pairs`` times, each in its own process, and
prints head's figure, base's, and head/base. The load average comes with every run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TREE = Path(os.environ.get("AIC_BENCH_TREE", HERE.parent))
sys.path[:0] = [str(TREE), str(TREE / "protos")]

TARGETS = {"first": "seconds, not minutes", "cp1": "p95 < 50 ms", "cp10": "p95 < 50 ms",
           "cp1000": "p95 < 500 ms", "rewind": "< 2,000 ms", "store_mb": "what the steps changed, not the tree",
           "tiny": "p95 < 5 ms", "tiny_step": "checkpoints add < 10 ms a step"}
Figures = dict[str, dict[str, list[Any]]]
"""tree label -> figure -> one value a run."""


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
    samples = sorted(samples)
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.95))]


def measure(opts: argparse.Namespace, base: Path) -> dict[str, object]:
    """Every figure of one tree (the one this process imports), as numbers."""
    from ai_coding.v1 import tools_pb2

    from services.kernel.config import Config
    from tests.support.tools_harness import ThreadedToolService

    got: dict[str, object] = {"load": os.getloadavg()[0]}
    os.environ.update(HOME=str(base / "home"), XDG_DATA_HOME=str(base / "home" / "data"))
    workspace = base / "ws"
    workspace.mkdir()
    paths = generate(workspace, opts.files, opts.mb)
    svc = ThreadedToolService(Config(data={"tools": {}}), str(base / "t.sock")).start()
    try:
        cpu: list[float] = []

        def checkpoint(label: str) -> tuple[float, tools_pb2.CheckpointInfo]:
            t0, c0 = time.perf_counter(), time.process_time()
            info = svc.stub.CreateCheckpoint(tools_pb2.CreateCheckpointRequest(session_id="s1", label=label),
                                             timeout=600)
            cpu.append((time.process_time() - c0) * 1000)
            return (time.perf_counter() - t0) * 1000, info

        t0 = time.perf_counter()
        svc.open("s1", str(workspace))
        _, first = checkpoint("first")
        got["first"], got["first_files"] = (time.perf_counter() - t0) * 1000, first.files
        rng = random.Random(11)
        big = min(1000, opts.files // 2)
        for key, count in (("cp1", 1), ("cp10", 10), ("cp1000", big)):
            samples, cpu[:] = [], []
            for i in range(opts.runs if count < 1000 else max(5, opts.runs // 3)):
                touch(paths, count, rng)
                ms, info = checkpoint(f"{count}-{i}")
                assert info.files_read == count, (info.files_read, count)
                samples.append(ms)
            got[key] = stats(samples)
            got[f"{key}_cpu"] = statistics.median(cpu)
        _, before = checkpoint("before rewind")
        touch(paths, big, rng)
        _, seen = checkpoint("after 1000 changes")  # the loop's baseline: the agent's last step
        t0, c0 = time.perf_counter(), time.process_time()
        report = svc.stub.RestoreCheckpoint(tools_pb2.RestoreCheckpointRequest(
            session_id="s1", checkpoint_id=before.checkpoint_id, baseline_checkpoint_id=seen.checkpoint_id),
            timeout=600)
        got["rewind"], got["rewind_files"] = (time.perf_counter() - t0) * 1000, report.written
        got["rewind_cpu"] = (time.process_time() - c0) * 1000
        workspace_bytes = sum(p.stat().st_size for p in paths)
        start_bytes = svc.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(session_id="s1")).store_bytes
        for i in range(opts.steps):
            touch(paths, 10, rng)
            checkpoint(f"step {i}")
        listed = svc.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(session_id="s1"))
        got["store_mb"] = listed.store_bytes / 1e6
        got["store_added_mb"] = (listed.store_bytes - start_bytes) / 1e6
        got["changed_mb"] = opts.steps * 10 * workspace_bytes / len(paths) / 1e6
        got["workspace_mb"], got["checkpoints"] = workspace_bytes / 1e6, len(listed.checkpoints)
        tiny = base / "tiny"
        tiny.mkdir()
        for name in ("calc.py", "test_calc.py", "README.md", "setup.cfg"):
            (tiny / name).write_text(f"# {name}\n" * 20)
        svc.open("tiny", str(tiny))
        samples = []
        for i in range(opts.runs):
            t0 = time.perf_counter()
            svc.stub.CreateCheckpoint(tools_pb2.CreateCheckpointRequest(session_id="tiny", label=f"t{i}"))
            samples.append((time.perf_counter() - t0) * 1000)
        got["tiny"] = stats(samples)
    finally:
        svc.stop()
    got["tiny_step"] = tiny_steps(base / "tiny", base, opts.runs // 3 or 1)
    return got


def tiny_steps(tiny: Path, base: Path, runs: int) -> tuple[float, float]:
    """Medians of a bash step on ``tiny`` with checkpoints on and off (services side by side)."""
    from services.kernel.config import Config
    from tests.support.tools_harness import ThreadedToolService

    on = ThreadedToolService(Config(data={"tools": {}}), str(base / "on.sock")).start()
    off = ThreadedToolService(Config(data={"tools": {"checkpoints": {"enabled": False}}}),
                              str(base / "off.sock")).start()
    times: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for label, svc in (("on", on), ("off", off)):
            svc.open(label, str(tiny))
            svc.call(label, "bash", json.dumps({"command": "true"}), call_id="warm")
        for i in range(runs):
            for label, svc in (("on", on), ("off", off)):
                t0 = time.perf_counter()
                _, result = svc.call(label, "bash", json.dumps({"command": "echo x >> log.txt"}), call_id=f"c{i}")
                times[label].append((time.perf_counter() - t0) * 1000)
                assert result.ok, result.output
    finally:
        on.stop()
        off.stop()
    return statistics.median(times["on"]), statistics.median(times["off"])


def lines(got: Figures, order: list[str], steps: int) -> list[str]:
    """One line a figure: head's value and target, then each base's value and head/base."""
    def value(key: str, label: str) -> list[float]:
        """A run's figure as one number: a p95 (a bash step: with checkpoints on), or the value."""
        return [float(x[(key != "tiny_step") * 1] if isinstance(x, list) else x) for x in got[label][key]]

    def show(key: str, label: str) -> str:
        runs = got[label][key]
        cpu = (f" (cpu {statistics.median(float(c) for c in got[label][f'{key}_cpu']):,.1f} ms)"
               if f"{key}_cpu" in got[label] else "")
        if key in ("cp1", "cp10", "cp1000", "tiny"):
            return (f"p50 {statistics.median(r[0] for r in runs):7.1f} ms  p95 {statistics.median(r[1] for r in runs):7.1f}"
                    f" ms{cpu}")
        if key == "tiny_step":
            on, off = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            return f"on {on:.1f} ms, off {off:.1f} ms: {on - off:+.1f} ms"
        unit = " MB" if key == "store_mb" else " ms"
        return f"{statistics.median(float(r) for r in runs):,.1f}{unit}{cpu}"

    head = got["head"]
    names = {"first": f"first checkpoint ({int(head['first_files'][0]):,} files)",
             "cp1": "checkpoint after     1 changed file", "cp10": "checkpoint after    10 changed files",
             "cp1000": "checkpoint after 1,000 changed files",
             "rewind": f"rewind of {int(head['rewind_files'][0]):,} files",
             "store_mb": f"store after all steps ({int(head['checkpoints'][0])} checkpoints)",
             "tiny": "4-file workspace, nothing changed", "tiny_step": "4-file workspace, a bash step"}
    out = []
    for key in TARGETS:
        text = f"{names[key]:<40} {show(key, 'head')}   target: {TARGETS[key]}"
        for label in order:
            if label != "head":
                pairs = [h / b for h, b in zip(value(key, "head"), value(key, label), strict=False) if b]
                text += f"   | {label}: {show(key, label)}, head/base {statistics.median(pairs):.2f}x"
        out.append(text)
    added = statistics.median(float(x) for x in head["store_added_mb"])
    out.append(f"  the last {steps} steps of 10 files added {added:,.1f} MB (their changed files: "
               f"{float(head['changed_mb'][0]):,.1f} MB) to a store that also holds the first copy of the "
               f"{float(head['workspace_mb'][0]):,.1f} MB workspace and the 1,000-file steps; "
               "cap tools.checkpoints.max_store_mb, default 2,048")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--base", default="", help="commit to measure beside the working tree")
    parser.add_argument("--pairs", type=int, default=1, help="with --base: base/head runs, alternating")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.json:
        with tempfile.TemporaryDirectory(prefix="aic-bench-", dir="/tmp") as tmp:
            print(json.dumps(measure(opts, Path(tmp))))
        return 0
    sys.path[:0] = [str(HERE.parent)]
    from bench.baseline import load, trees

    print(f"{load()}; {opts.files:,} files / {opts.mb} MB, {opts.runs} runs a figure", flush=True)
    got: Figures = {}
    with trees(opts.base) as checkout:
        for _ in range(opts.pairs if opts.base else 1):
            for tree in checkout:
                done = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--json"], capture_output=True, text=True,
                                      env={**os.environ, "AIC_BENCH_TREE": str(tree.root)}, check=False)
                if done.returncode != 0:
                    raise SystemExit(f"{tree.label}: the bench failed: {done.stderr[-2000:]}")
                for key, value in json.loads(done.stdout.splitlines()[-1]).items():
                    got.setdefault(tree.label, {}).setdefault(key, []).append(value)
                print(f"  ran {tree.label} at load {got[tree.label]['load'][-1]:.1f}", flush=True)
        for line in lines(got, [t.label for t in checkout], opts.steps):
            print(line)
    print(f"done at {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
