"""Client and service start-up, with the figures of a base commit measured in the same run.

    .venv/bin/python bench/startup.py [--base fa37905] [--runs 5]

For the working tree ("head") and, with ``--base REV``, that commit checked out in a temporary
worktree (bench/baseline.py), taken in pairs (base, head, base, head ...), medians of ``--runs``:

- ``ai-coding --version`` (target < 80 ms);
- ``ai-coding up`` until it returns, from nothing running (target < 0.8 s): at the head the loop and
  tools SERVING, memory and the gateway on demand (services/kernel/on_demand.py); the base waits for
  all four, and so does the head bed ``head, all at up`` (``supervisor.on_demand: []``), printed beside;
- warm ``ai-coding run`` on the scripted three-command fix (bench/loop.py's FIX_SCRIPT) with
  every service up (target < 0.25 s), with the client process's own CPU (user+sys: its imports, calls and rendering; less noisy than
  the wall time on a shared machine);
- cold ``ai-coding run`` on the same task with nothing running: it starts the services itself
  (target < 0.8 s); and the cold turn's own time inside the loop against a warm one's (from the
  turns' traces; target: the first turn at most 10% slower);
- the trees run with the loop's memory and MCP off (the turn measures the loop, the tools and the
  client); the head bed ``head, memory on`` runs the default ``loop`` section: its cold run asks the
  supervisor for memory at once, and its warm run, the first after ``up``, waits for memory's start;
- where the warm run's client start goes: ``-X importtime``, cumulative ms of the heaviest
  packages ``ai-coding run`` imports in each tree (self time per package) (one run each, so noisy: a breakdown, not a
  figure).

The loop's overhead per model step is bench/loop.py's first figure.
Everything runs in private HOMEs and runtime dirs, one per tree; nothing a user runs is touched.
The load average is printed with each figure: the machine is shared, so trust the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

import yaml  # noqa: E402

from bench.baseline import Tree, figure, load, trees  # noqa: E402

FIX_SCRIPT = [
    {"match": "fix the failing test", "tool_calls": [{"name": "bash", "arguments": {"command": "python3 -B test_calc.py"}}]},
    {"match": "AssertionError", "tool_calls": [{"name": "read", "arguments": {"path": "calc.py"}},
                                               {"name": "edit", "arguments": {
        "path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}}]},
    {"match": "calc.py", "tool_calls": [{"name": "bash", "arguments": {"command": "python3 -B test_calc.py && echo ALL-OK"}}]},
    {"match": "ALL-OK", "text": "Fixed add() in calc.py; the test passes."},
]
HEAVY_MODULES = ("openai", "mcp", "opentelemetry", "grpc")


class Bed:
    """One tree's private HOME, runtime dir, workspace and fake model."""

    def __init__(self, tree: Tree, base: Path, runs: int, label: str = "", **config: object) -> None:
        """``label``: the name the figures give this bed (the tree's label by default); ``config``: top-level
        sections that replace the bench's own (``supervisor``, ``loop``)."""
        from services.fake_model import FakeModelServer

        self.tree = tree
        self.label = label or tree.label
        self.home = base / self.label / "home"
        self.run_dir = Path(tempfile.mkdtemp(prefix="aics-", dir="/tmp"))
        self.ws = base / self.label / "ws"
        self.ws.mkdir(parents=True)
        self.fake = FakeModelServer(FIX_SCRIPT * (4 * runs + 4))
        self.fake.__enter__()
        cfg = {"models": {"fake": {"provider": "generic", "base_url": self.fake.url, "api_key": "k",
                                   "model": "fake-model"}},
               "default_model": "fake", "loop": {"memory": False, "mcp": False, "harvest": False}, **config}
        (self.home / ".config" / "ai-coding").mkdir(parents=True, mode=0o700)
        (self.home / ".config" / "ai-coding" / "config.yaml").write_text(yaml.safe_dump(cfg))
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith("AI_CODING_") and k != "PYTHONDONTWRITEBYTECODE"}
        clean.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.home / ".config"),
                     AI_CODING_RUNTIME_DIR=str(self.run_dir))
        self.env = tree.env(clean)
        self.cpu = 0.0

    def close(self) -> None:
        self.call("down")
        self.fake.__exit__(None, None, None)
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def call(self, *args: str, flags: tuple[str, ...] = ()) -> tuple[float, subprocess.CompletedProcess[str]]:
        """Run the tree's ``ai-coding ARGS``: wall s and the process; ``self.cpu`` is then its own user+sys
        CPU s (what the client computed, apart from the services and the wait for them)."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(self.tree.cli(*args, python_flags=flags), env=self.env, cwd=self.ws,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        return wall, done

    def fix(self, flags: tuple[str, ...] = ()) -> tuple[float, float, subprocess.CompletedProcess[str]]:
        """One ``ai-coding run`` of the fix task: wall s, the turn's own ms inside the loop, the process."""
        (self.ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (self.ws / "test_calc.py").write_text("from calc import add\nassert add(2, 3) == 5\nprint('ok')\n")
        wall, done = self.call("run", "--auto-approve", "-w", str(self.ws), "fix the failing test", flags=flags)
        if done.returncode != 0 or "a + b" not in (self.ws / "calc.py").read_text():
            raise SystemExit(f"{self.label}: the fix run failed (exit {done.returncode}): "
                             f"{done.stdout[-300:]} {done.stderr[-300:]}")
        return wall, self.last_turn_ms(), done

    def last_turn_ms(self) -> float:
        summaries = sorted((self.ws / ".ai-coding" / "traces").glob("*/summary.json"),
                           key=lambda p: p.stat().st_mtime)
        if not summaries:
            return float("nan")
        return float(json.loads(summaries[-1].read_text())["turns"][-1]["duration_ms"])


ALL_AT_UP = "head, all at up"
MEMORY_ON = "head, memory on"


def only(values: dict[str, list[float]], head: str = "head") -> dict[str, list[float]]:
    """The base's figures and those of the head bed ``head`` (named "head", as :func:`figure` wants)."""
    return {label: v for label, v in values.items() if label not in ("head", ALL_AT_UP, MEMORY_ON)} | {
        "head": values[head]}


def import_breakdown(stderr: str, top: int) -> dict[str, float]:
    """Self ms of every imported module summed per package (``google.protobuf``, ``grpc``, ``clients.cli``
    ...), heaviest first, and ``total`` (the sum over every module)."""
    totals: dict[str, float] = defaultdict(float)
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, _, name = line.removeprefix("import time:").split("|")
        if not own.strip().isdigit():
            continue
        parts = name.strip().split(".")
        key = ".".join(parts[:2]) if parts[0] in ("google", "clients", "services", "ai_coding") else parts[0]
        totals[key] += int(own) / 1000
    ranked = dict(sorted(totals.items(), key=lambda kv: -kv[1])[:top])
    return {"total": sum(totals.values()), **ranked}


def heavy_imports(bed: Bed) -> list[str]:
    _, done = bed.call("--version", flags=("-X", "importtime"))
    names = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()
             if line.startswith("import time:")}
    return sorted(names & set(HEAVY_MODULES))


def measure(beds: list[Bed], runs: int) -> dict[str, dict[str, list[float]]]:
    got: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for bed in beds:  # warm-up: byte-compile each tree, start and stop once
        bed.call("--version")
        bed.call("up")
        bed.fix()
        bed.call("down")
    for _ in range(runs):
        for bed in beds:
            label = bed.label
            got["version"][label].append(bed.call("--version")[0])
            wall, done = bed.call("up")
            if done.returncode != 0:
                raise SystemExit(f"{label}: ai-coding up failed: {done.stdout[-300:]} {done.stderr[-300:]}")
            got["up"][label].append(wall)
            wall, turn_ms, _ = bed.fix()
            got["warm"][label].append(wall)
            got["warm_cpu"][label].append(bed.cpu)
            got["warm_turn"][label].append(turn_ms)
            bed.call("down")
            wall, turn_ms, _ = bed.fix()
            got["cold"][label].append(wall)
            got["cold_turn"][label].append(turn_ms)
            bed.call("down")
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="fa37905", help="commit to measure beside the working tree ('' for none)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=12, help="imports to list in the breakdown")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="aic-bench-", dir="/tmp"))
    with trees(args.base) as checkout:
        beds = [Bed(tree, base, args.runs) for tree in checkout]
        # The head as users get it (memory on: a cold run starts it at once) and with every service
        # started by `up` (supervisor.on_demand: []), what the base's `up` waits for.
        head = checkout[-1]
        beds += [Bed(head, base, args.runs, ALL_AT_UP, supervisor={"on_demand": []}),
                 Bed(head, base, args.runs, MEMORY_ON, loop={"harvest": False})]
        try:
            got = measure(beds, args.runs)
            print(figure("ai-coding --version", "ms", got["version"], "< 80 ms", 1000))
            for bed in beds[:len(checkout)]:
                print(f"  {bed.label} --version imports: {', '.join(heavy_imports(bed)) or 'none'} "
                      f"(of {', '.join(HEAVY_MODULES)}; target none)")
            print(figure("ai-coding up (until it returns)", "ms", only(got["up"]), "< 800 ms", 1000))
            print("  (head: the loop and tools SERVING, memory and the gateway on demand; the base waits for all "
                  "four)")
            print(figure(f"  {ALL_AT_UP}: up, all four SERVING", "ms", only(got["up"], ALL_AT_UP), "< 800 ms", 1000))
            print(figure("ai-coding run, fix task, warm", "ms", only(got["warm"]), "< 250 ms", 1000))
            print(figure("  its client's own CPU (user+sys)", "ms", only(got["warm_cpu"]), "-", 1000))
            print(figure("ai-coding run, fix task, cold", "ms", only(got["cold"]), "< 800 ms", 1000))
            print(figure(f"  {ALL_AT_UP}: cold", "ms", only(got["cold"], ALL_AT_UP), "< 800 ms", 1000))
            print(figure(f"  {MEMORY_ON}: cold", "ms", only(got["cold"], MEMORY_ON), "< 800 ms", 1000))
            print(figure(f"  {MEMORY_ON}: warm", "ms", only(got["warm"], MEMORY_ON), "< 250 ms", 1000))
            print(figure("  the warm turn inside the loop", "ms", only(got["warm_turn"]), "-"))
            print(figure("  the cold turn inside the loop", "ms", only(got["cold_turn"]), "<= 1.1x the warm one"))
            for label in got["warm_turn"]:
                slower = statistics.median(got["cold_turn"][label]) / statistics.median(got["warm_turn"][label])
                print(f"  {label}: the cold (first) turn takes {slower:.2f}x a warm one (target <= 1.10x)")
            print(f"where the warm `ai-coding run` goes (-X importtime, self ms summed per package, one run each, {load()}):")
            for bed in beds[:len(checkout)]:
                bed.call("up")
                _, _, done = bed.fix(flags=("-X", "importtime"))
                parts = import_breakdown(done.stderr, args.top)
                print(f"  {bed.label:>8}: " + ", ".join(f"{k} {v:.0f}" for k, v in parts.items()))
                bed.call("down")
        finally:
            for bed in beds:
                bed.close()
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
