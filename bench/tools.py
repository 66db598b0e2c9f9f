"""Tool service latency: p50/p95 through gRPC over a Unix socket, with baselines from the same run.

    .venv/bin/python bench/tools.py [--runs 50]

Prints `bash true` with and without bwrap (target: sandboxed p50 < 40 ms on 2
cores), each alternated run by run with its baseline (spawning bash, or the
service's exact bwrap command line, directly), `read` of a 1 MB file, and
`grep` over a 10,000-file tree with ripgrep and with the Python fallback.
The machine's load average is printed first: bwrap's namespace set-up slows
down a lot on a busy machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent.parent / "protos")]

from services.kernel.config import Config  # noqa: E402
from services.tools.sandbox import bwrap_argv  # noqa: E402
from tests.support.tools_harness import ThreadedToolService, ToolServiceClient  # noqa: E402


def _stats(samples: list[float]) -> tuple[float, float]:
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.95))]


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def measure(fn: Callable[[], object], runs: int, warmup: int = 3) -> tuple[float, float]:
    """(p50, p95) in milliseconds."""
    for _ in range(warmup):
        fn()
    return _stats([_timed(fn) for _ in range(runs)])


def measure_pair(baseline: Callable[[], object], subject: Callable[[], object],
                 runs: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Both alternated run by run, so a busy machine slows them alike (the ratio stays meaningful)."""
    for _ in range(3):
        baseline()
        subject()
    base, subj = [], []
    for _ in range(runs):
        base.append(_timed(baseline))
        subj.append(_timed(subject))
    return _stats(base), _stats(subj)


def row(name: str, figures: tuple[float, float], baseline: tuple[float, float] | None = None) -> None:
    ratio = f"  x{figures[0] / baseline[0]:.1f} of baseline p50" if baseline else ""
    print(f"{name:<48} p50 {figures[0]:8.2f} ms   p95 {figures[1]:8.2f} ms{ratio}")


def checked(svc: ToolServiceClient, session: str, tool: str, args: dict[str, object]) -> None:
    _, result = svc.call(session, tool, json.dumps(args))
    if not result.ok:
        raise SystemExit(f"{tool} failed in the bench: {result.error.code}: {result.error.message}")


def build_tree(root: Path, files: int) -> None:
    for i in range(files):
        directory = root / f"pkg{i // 100:03d}"
        directory.mkdir(exist_ok=True)
        body = "".join(f"def function_{i}_{n}(x):\n    return x + {n}\n" for n in range(10))
        if i % 500 == 0:
            body += "NEEDLE_MARKER = True\n"
        (directory / f"mod{i:05d}.py").write_text(body)


@contextlib.contextmanager
def served(base: Path, name: str, config_yaml: str) -> Iterator[ToolServiceClient]:
    """`ai-coding serve tools` as its own process (as deployed: no GIL shared with the client)."""
    run_dir = base / f"run-{name}"
    config = base / f"{name}.yaml"
    config.write_text(config_yaml)
    env = {**os.environ, "AI_CODING_RUNTIME_DIR": str(run_dir), "AI_CODING_CONFIG": str(config)}
    exe = Path(sys.executable).parent / "ai-coding"
    proc = subprocess.Popen([str(exe), "serve", "tools"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    client = ToolServiceClient(str(run_dir / "tools.sock"))
    try:
        client.connect(alive=lambda: proc.poll() is None)
        yield client
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    runs = args.runs
    base = Path(tempfile.mkdtemp(prefix="aic-bench-", dir="/tmp"))
    try:
        workspace = base / "ws"
        workspace.mkdir()
        (workspace / "big.txt").write_text("".join(f"{n:08d} some text on this line\n" for n in range(32_768)))
        tree = base / "tree"
        tree.mkdir()
        build_tree(tree, args.files)
        bwrap = shutil.which("bwrap")
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"tool service bench: {runs} runs each, {args.files} files in the grep tree, "
              f"{os.cpu_count()} cpus, load average {load}; the service runs as its own process")

        def raw_bash() -> None:
            subprocess.run(["/bin/bash", "-c", "true"], check=True)

        with served(base, "none", "tools:\n  sandbox:\n    mode: none\n") as plain:
            plain.open("b", str(workspace))
            bash_base, plain_figures = measure_pair(
                raw_bash, lambda: checked(plain, "b", "bash", {"command": "true"}), runs)
            row("baseline: spawn bash -c true (no service)", bash_base)
            row("gRPC bash true, sandbox none", plain_figures, bash_base)
        with served(base, "bwrap", "tools:\n  sandbox:\n    mode: bwrap\n") as svc:
            svc.open("b", str(workspace))
            if bwrap:
                # The exact command line the service runs, spawned directly: the sandbox's own cost.
                argv = bwrap_argv(bwrap, [workspace.resolve()], workspace.resolve(), False, [str(Path.home())],
                                  "true")
                bwrap_base, sandboxed = measure_pair(
                    lambda: subprocess.run(argv, check=True),
                    lambda: checked(svc, "b", "bash", {"command": "true"}), runs)
                row("baseline: spawn the same bwrap argv (no service)", bwrap_base, bash_base)
                row("gRPC bash true, sandbox bwrap", sandboxed, bwrap_base)
                verdict = "meets" if sandboxed[0] < 40 else "MISSES"
                print(f"{'':<48} target p50 < 40 ms: {verdict}; service overhead over bwrap itself "
                      f"{sandboxed[0] - bwrap_base[0]:+.1f} ms")
            row("gRPC read of a 1 MB file", measure(lambda: checked(svc, "b", "read", {"path": "big.txt"}), runs))
        # Switching grep engines needs the runtime object: this part runs the service in-process.
        with ThreadedToolService(Config(), str(base / "grep.sock")) as local:
            local.open("t", str(tree))
            grep_args = {"pattern": "NEEDLE_MARKER", "max_results": 2000}
            runtime = local.runtime()
            if runtime.ripgrep:
                row(f"gRPC grep over {args.files} files (ripgrep)",
                    measure(lambda: checked(local, "t", "grep", grep_args), max(5, runs // 5), warmup=1))
            runtime.ripgrep = None
            row(f"gRPC grep over {args.files} files (Python fallback)",
                measure(lambda: checked(local, "t", "grep", grep_args), max(5, runs // 5), warmup=1))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
