"""Startup and per-step overhead, with a baseline measured in the same run.

    .venv/bin/python bench/startup.py [--runs N] [--steps K]

Prints:
- ``ai-coding --version`` wall time (median of N) beside a bare ``python -c pass``, and which of
  openai / mcp / opentelemetry / grpc it imports (none; tests/unit/cli/test_cli_startup_imports.py);
- ``ai-coding up`` until every service answers SERVING (median of 3) beside each service
  (``ai-coding serve NAME``) started alone, the slowest being the floor for ``up``;
- loop overhead per model step: a turn of K tool steps (``read`` of a small file) plus a
  final answer, against the fake model; overhead = client-observed turn time minus the fake
  model's own handling time (its request log) minus the tools' reported durations, per step.

Targets on 2 cores (issue 2): --version < 0.3 s, up < 3 s, overhead < 15 ms per step.
Everything runs in a private HOME and runtime dir; nothing a user runs is touched.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

CLI = str(Path(sys.executable).with_name("ai-coding"))


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def bench_version(env: dict[str, str], runs: int) -> tuple[float, float]:
    version = [timed([CLI, "--version"], env) for _ in range(runs)]
    bare = [timed([sys.executable, "-c", "pass"], env) for _ in range(runs)]
    return statistics.median(version), statistics.median(bare)


HEAVY_MODULES = ("openai", "mcp", "opentelemetry", "grpc")


def version_imports(env: dict[str, str]) -> list[str]:
    """Which of HEAVY_MODULES ``ai-coding --version`` imports (the client must import none)."""
    done = subprocess.run([sys.executable, "-X", "importtime", CLI, "--version"], env=env, check=True,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    top = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()
           if line.startswith("import time:")}
    return sorted(top & set(HEAVY_MODULES))


def bench_up(env: dict[str, str], runs: int) -> tuple[float, dict[str, float]]:
    """Median ``up`` time, and each service's own start-to-SERVING time started alone."""
    from clients.cli.runtime import wait_until
    from services.kernel.channels import check_health
    from services.kernel.endpoints import PROTO_SERVICE, SERVICES, Endpoint

    ups = []
    for _ in range(runs):
        ups.append(timed([CLI, "up"], env))
        subprocess.run([CLI, "down"], env=env, check=True, capture_output=True)
    alone: dict[str, float] = {}
    for name in SERVICES:
        endpoint = Endpoint(name, "unix", path=str(Path(env["AI_CODING_RUNTIME_DIR"]) / f"{name}.sock"))
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            proc = subprocess.Popen([CLI, "serve", name], env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            wait_until(lambda e=endpoint, n=name: check_health(e, PROTO_SERVICE[n], 0.5) == "SERVING", 60, 0.01)
            times.append(time.perf_counter() - start)
            proc.terminate()
            proc.wait(timeout=30)
        alone[name] = statistics.median(times)
    return statistics.median(ups), alone


def bench_overhead(env: dict[str, str], workspace: Path, steps: int, turns: int) -> list[dict[str, float]]:
    from clients.cli import control, views
    from clients.cli.turn import AutoApprover, drive_turn, open_session
    from services.fake_model import FakeModelServer

    script = [{"name": f"read-{i}", "tool_calls": [{"name": "read", "arguments": {"path": f"small{i}.txt"}}]}
              for i in range(steps)] + [{"name": "answer", "text": "Done reading."}]
    results = []
    with FakeModelServer(script * turns) as model:
        config = Path(env["HOME"]) / "bench-config.yaml"
        config.write_text(
            "default_model: fake\nmodels:\n  fake:\n    provider: generic\n    model: fake-model\n"
            f"    base_url: {model.url}\n    api_key: bench\n"
            f"ai:\n  max_tool_iterations: {steps + 5}\nloop:\n  harvest: false\n"
        )
        os.environ.update(env)
        os.environ["AI_CODING_CONFIG"] = str(config)
        setup = control.resolve(workspace)
        control.start(setup)
        try:
            for _ in range(turns):
                session = open_session(setup.endpoints["loop"], str(workspace), auto_approve=True).session_id
                events: list[views.Event] = []
                seen = len(model.chat_requests)
                start = time.perf_counter()
                outcome = drive_turn(setup.endpoints["loop"], session, "read the small files",
                                     events.append, AutoApprover())
                wall_ms = (time.perf_counter() - start) * 1000
                if outcome.exit_code != 0:
                    reason = outcome.finished.reason if outcome.finished else ""
                    raise SystemExit(f"bench turn ended {outcome.status} ({reason}) after "
                                     f"{len(model.chat_requests) - seen} model requests: {model.errors}")
                requests = model.chat_requests[seen:]
                model_ms = sum(r.handling_ms for r in requests)
                tool_ms = sum(e.body.result.duration_ms for e in events if isinstance(e.body, views.ToolFinished))
                results.append({"steps": len(requests), "wall_ms": wall_ms, "model_ms": model_ms,
                                "tool_ms": tool_ms,
                                "overhead_ms": (wall_ms - model_ms - tool_ms) / len(requests)})
        finally:
            control.stop(setup)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="aic-bench-", dir="/tmp"))
    home, rdir, workspace = base / "home", base / "run", base / "ws"
    for d in (home, workspace):
        d.mkdir(parents=True)
    rdir.mkdir(mode=0o700)
    for k in range(args.steps):  # distinct files: the loop's no-progress guard stops identical calls
        (workspace / f"small{k}.txt").write_text("".join(f"file {k} line {i}\n" for i in range(50)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_CODING_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), AI_CODING_RUNTIME_DIR=str(rdir))

    version, bare = bench_version(env, args.runs)
    print(f"ai-coding --version     {version * 1000:8.1f} ms   (python -c pass {bare * 1000:.1f} ms, "
          f"ratio {version / bare:.2f}x; target < 300 ms)")
    heavy = version_imports(env)
    print(f"  heavy imports:        {', '.join(heavy) or 'none'} (of {', '.join(HEAVY_MODULES)}; target none)")
    up, alone = bench_up(env, 3)
    slowest = max(alone, key=lambda n: alone[n])
    print(f"ai-coding up (SERVING)  {up * 1000:8.1f} ms   (slowest service alone: {slowest} "
          f"{alone[slowest] * 1000:.1f} ms, ratio {up / alone[slowest]:.2f}x; target < 3000 ms)")
    print("  each service alone:   " + ", ".join(f"{n} {t * 1000:.0f} ms" for n, t in alone.items()))
    turns = bench_overhead(env, workspace, args.steps, args.turns)
    per_step = [t["overhead_ms"] for t in turns]
    model_per_step = statistics.median(t["model_ms"] / t["steps"] for t in turns)
    print(f"loop overhead per step  {statistics.median(per_step):8.1f} ms   (median of {len(turns)} turns x "
          f"{turns[0]['steps']} steps; range {min(per_step):.1f}-{max(per_step):.1f} ms; fake model's own "
          f"{model_per_step:.1f} ms/step, ratio {statistics.median(per_step) / model_per_step:.1f}x; target < 15 ms)")


if __name__ == "__main__":
    main()
