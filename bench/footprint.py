"""What the running services hold and spend: RSS idle and after many short turns, CPU per turn.

    .venv/bin/python bench/footprint.py [--base fa37905] [--turns 100,500,1000] [--clients 10]

For the working tree ("head") and, with ``--base REV``, that commit in a temporary worktree
(bench/baseline.py), one after the other, each in its own private HOME and runtime dir:

- ``ai-coding up``; the CPU ms each process spent until every service was SERVING (and 3 s later:
  work started right after SERVING, such as the memory service's warm-up); after it settles, the RSS of the supervisor and each service (idle; target: the
  total under 160 MB), and their PSS (shared library pages split between the processes sharing them);
- short turns, each what ``ai-coding run`` does (OpenSession, one turn over ConverseBatched to
  turn_finished, the fake model answering one line), one after another from this process; the
  RSS of every process after 100, 500 and 1,000 of them (target: the loop's RSS after 1,000
  within 5 MB of after 100; the loop keeps at most 100 idle sessions in memory and evicts the
  least recently used);
- CPU ms per turn of each process (its utime + stime over the turns, from /proc) and of the client:
  ``--clients`` runs of ``ai-coding run`` (CPU of the finished process, from wait4's rusage);
- the floor of the process model, once, before the trees: the RSS of a bare interpreter, of one
  that imported asyncio and grpc, and of a gRPC server answering only health on a Unix socket
  (what each service holds before any code of its own), and what the head's idle processes add
  up to on that floor against the 160 MB target;
- for the head, the life of the services started on demand with the default ``loop`` section
  (memory on; supervisor.on_demand, services/kernel/on_demand.py): right after ``ai-coding up``
  (which starts memory for the turn to come), after one ``ai-coding run``, and once memory stopped
  for idleness (``on_demand_idle_seconds`` set to a few seconds here); beside it, the same with
  ``supervisor.on_demand: []`` (every service started by ``up``, as before).

The trees' config turns the loop's memory and MCP off (the short turns measure the loop), so with
the head's defaults neither memory nor the gateway is ever started there: the idle figure is the
loop, tools and the supervisor; the base starts all four services.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

import grpc  # noqa: E402
from ai_coding.v1 import loop_pb2, loop_pb2_grpc  # noqa: E402

from bench.baseline import Tree, load, trees  # noqa: E402
from services.fake_model import FakeModelServer  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int, field: str = "Rss") -> float:
    """``Rss`` or ``Pss`` (MB) of ``pid`` from /proc/PID/smaps_rollup."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pss_mb(pid: int) -> float:
    return rss_mb(pid, "Pss")


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICK  # utime, stime


FLOOR_SERVER = """
import asyncio, sys
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer

async def main():
    server = grpc.aio.server()
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    server.add_insecure_port("unix:" + sys.argv[1])
    await server.start()
    await health.set("", health_pb2.HealthCheckResponse.SERVING)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""
FLOOR_PROBES = {
    "bare interpreter": "import sys; print('ready', flush=True); sys.stdin.read()",
    "import asyncio, grpc": "import sys, asyncio, grpc, grpc.aio; print('ready', flush=True); sys.stdin.read()",
    "gRPC server, health only": FLOOR_SERVER,
}


def floor_rss() -> dict[str, float]:
    """RSS (MB) of each FLOOR_PROBES process, idle after it said ready (run with this interpreter)."""
    got = {}
    with tempfile.TemporaryDirectory(prefix="aicf-floor-", dir="/tmp") as tmp:
        for what, code in FLOOR_PROBES.items():
            proc = subprocess.Popen([sys.executable, "-c", code, str(Path(tmp) / "floor.sock")],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                assert proc.stdout is not None
                if proc.stdout.readline().strip() != "ready":
                    raise SystemExit(f"the floor probe {what!r} did not start")
                time.sleep(1)
                got[what] = rss_mb(proc.pid)
            finally:
                proc.kill()
                proc.wait()
    return got


def short_turn(stub: loop_pb2_grpc.AgentLoopStub, workspace: str, n: int) -> None:
    opened = stub.OpenSession(loop_pb2.OpenSessionLoopRequest(workspace=workspace, auto_approve=True), timeout=60)
    start = loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=opened.session_id, input=f"task {n}"))
    call = stub.ConverseBatched(iter([start]), timeout=120)
    try:
        for batch in call:
            for event in batch.events:
                if event.WhichOneof("event") == "turn_finished":
                    if event.turn_finished.status != loop_pb2.TURN_STATUS_COMPLETED:
                        raise SystemExit(f"turn {n} ended {event.turn_finished.status}: {event.turn_finished.reason}")
                    return
    finally:
        call.cancel()


def client_cpu_ms(tree: Tree, env: dict[str, str], workspace: Path, runs: int) -> list[float]:
    """CPU ms of each of ``runs`` ``ai-coding run`` processes (user + sys, from wait4)."""
    samples = []
    for i in range(runs):
        proc = subprocess.Popen(tree.cli("run", "--auto-approve", "-w", str(workspace), f"client task {i}"),
                                env=env, cwd=workspace, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"{tree.label}: ai-coding run exited {proc.returncode}")
        samples.append((usage.ru_utime + usage.ru_stime) * 1000)
    return samples


def bed(tree: Tree, base: Path, name: str) -> tuple[Path, Path, dict[str, str]]:
    """A private HOME, runtime dir and workspace for ``tree``: (home, runtime dir, env)."""
    home, run_dir = base / name / "home", Path(tempfile.mkdtemp(prefix="aicf-", dir="/tmp"))
    (base / name / "ws").mkdir(parents=True)
    (home / ".config" / "ai-coding").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_CODING_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), AI_CODING_RUNTIME_DIR=str(run_dir))
    return home, run_dir, tree.env(env)


def write_config(home: Path, url: str, **sections: object) -> None:
    config = {"default_model": "fake", "models": {"fake": {"provider": "generic", "model": "fake-model",
                                                           "base_url": url, "api_key": "k", "max_retries": 0}},
              **sections}
    (home / ".config" / "ai-coding" / "config.yaml").write_text(json.dumps(config))


def running(run_dir: Path) -> dict[str, int]:
    """The supervisor's and every running service's pid, from the supervisor's state file."""
    state = json.loads((run_dir / "supervisor.json").read_text())
    return {"supervisor": int(state["pid"]),
            **{name: int(s["pid"]) for name, s in state["services"].items() if s.get("pid")}}


def on_demand_cycle(tree: Tree, base: Path) -> None:
    """RSS with the default loop section (memory on): idle, after one run, after memory's idle stop;
    and the same idle and after-one-run figures with every service started by ``up``."""
    idle_stop = 6.0
    with FakeModelServer([{"text": "done, briefly", "repeat": "forever"}]) as fake:
        for label, supervisor in (("on demand", {"on_demand_idle_seconds": idle_stop}),
                                  ("all at up", {"on_demand": []})):
            home, run_dir, env = bed(tree, base, "cycle-" + label.replace(" ", "-"))
            ws = home.parent / "ws"
            write_config(home, fake.url, loop={"harvest": False}, supervisor=supervisor)
            try:
                subprocess.run(tree.cli("up"), env=env, check=True, capture_output=True, timeout=120, cwd=ws)
                time.sleep(1)  # up started memory for the turn to come; it stops idle_stop s later
                figures = [("right after up", total_rss(run_dir))]
                subprocess.run(tree.cli("run", "-w", str(ws), "one task"), env=env, check=True,
                               capture_output=True, timeout=120, cwd=ws)
                time.sleep(1)
                figures.append(("after one run", total_rss(run_dir)))
                if label == "on demand":
                    deadline = time.monotonic() + idle_stop + 30
                    while "memory" in running(run_dir) and time.monotonic() < deadline:
                        time.sleep(0.2)
                    figures.append((f"after memory's idle stop ({idle_stop:g} s here)", total_rss(run_dir)))
                print(f"[{tree.label}] default loop config, {label}: " + "; ".join(
                    f"{what} {mb:.0f} MB ({', '.join(who)})" for what, (mb, who) in figures) + f" ({load()})")
            finally:
                subprocess.run(tree.cli("down"), env=env, capture_output=True, timeout=120, cwd=ws)
                shutil.rmtree(run_dir, ignore_errors=True)


def total_rss(run_dir: Path) -> tuple[float, list[str]]:
    """Total RSS (MB) of the supervisor and the services running, and who they are."""
    pids = running(run_dir)
    return sum(rss_mb(pid) for pid in pids.values()), list(pids)


def measure(tree: Tree, base: Path, marks: list[int], clients: int,
            floor: dict[str, float] | None = None) -> None:
    home, run_dir, env = bed(tree, base, tree.label)
    ws = home.parent / "ws"
    with FakeModelServer([{"text": "done, briefly", "repeat": "forever"}]) as fake:
        write_config(home, fake.url, loop={"memory": False, "mcp": False, "harvest": False})
        try:
            subprocess.run(tree.cli("up"), env=env, check=True, capture_output=True, timeout=120, cwd=ws)
            pids = running(run_dir)
            started = {name: cpu_ms(pid) for name, pid in pids.items()}
            time.sleep(3)  # let start-up work that follows SERVING finish
            settled = {name: cpu_ms(pid) for name, pid in pids.items()}
            print(f"[{tree.label}] CPU ms to SERVING: " + ", ".join(f"{n} {v:.0f}" for n, v in started.items())
                  + f" | total {sum(started.values()):.0f} ms (the services start side by side on {os.cpu_count()} "
                  "cores); after settling: " + ", ".join(f"{n} {v:.0f}" for n, v in settled.items()))
            idle = {name: rss_mb(pid) for name, pid in pids.items()}
            if floor is not None:
                services = len(pids) - 1
                least = services * floor["gRPC server, health only"] + idle["supervisor"]
                print(f"[{tree.label}] floor of the {services} gRPC services running idle and a supervisor: "
                      f"{services} x {floor['gRPC server, health only']:.1f} + {idle['supervisor']:.1f} = "
                      f"{least:.0f} MB RSS before any service code (target < 160 MB; four services: "
                      f"{4 * floor['gRPC server, health only'] + idle['supervisor']:.0f} MB)")
            idle_pss = {name: pss_mb(pid) for name, pid in pids.items()}
            print(f"[{tree.label}] idle RSS: " + ", ".join(f"{n} {v:.0f}" for n, v in idle.items())
                  + f" | total {sum(idle.values()):.0f} MB (target < 160 MB; {load()})")
            print(f"[{tree.label}] idle PSS: " + ", ".join(f"{n} {v:.0f}" for n, v in idle_pss.items())
                  + f" | total {sum(idle_pss.values()):.0f} MB (RSS counts the interpreter's and grpc's shared "
                  "library pages once per process; PSS splits them: the memory the processes really hold)")
            cpu_before = {name: cpu_ms(pid) for name, pid in pids.items()}
            done = 0
            rss_at: dict[int, dict[str, float]] = {}
            with grpc.insecure_channel(f"unix:{run_dir / 'loop.sock'}") as channel:
                stub = loop_pb2_grpc.AgentLoopStub(channel)
                began = time.perf_counter()
                for mark in marks:
                    while done < mark:
                        short_turn(stub, str(ws), done)
                        done += 1
                    rss_at[mark] = {name: rss_mb(pid) for name, pid in pids.items()}
                    print(f"[{tree.label}] after {mark:>5} short turns: "
                          + ", ".join(f"{n} {v:.0f}" for n, v in rss_at[mark].items())
                          + f" | total {sum(rss_at[mark].values()):.0f} MB")
                wall = time.perf_counter() - began
            per_turn = {name: (cpu_ms(pid) - cpu_before[name]) / done for name, pid in pids.items()}
            per_session = (rss_at[marks[0]]["loop"] - idle["loop"]) / marks[0] * 1024
            print(f"[{tree.label}] loop RSS per session held in memory: {per_session:.0f} KB "
                  f"((RSS after {marks[0]} turns - idle) / {marks[0]}; the loop holds at most 100 idle sessions)")
            first, last = rss_at[marks[0]]["loop"], rss_at[marks[-1]]["loop"]
            print(f"[{tree.label}] loop RSS {first:.1f} MB after {marks[0]} turns -> {last:.1f} MB after {marks[-1]}: "
                  f"{last - first:+.1f} MB (target within 5 MB)")
            print(f"[{tree.label}] CPU ms per short turn: " + ", ".join(f"{n} {v:.2f}" for n, v in per_turn.items())
                  + f" ({done} turns in {wall:.1f} s; {load()})")
            samples = sorted(client_cpu_ms(tree, env, ws, clients))
            print(f"[{tree.label}] client CPU per `ai-coding run` (a one-step turn): median "
                  f"{samples[len(samples) // 2]:.0f} ms, min {samples[0]:.0f} ms over {clients} runs ({load()})")
        finally:
            subprocess.run(tree.cli("down"), env=env, capture_output=True, timeout=120, cwd=ws)
            shutil.rmtree(run_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="fa37905", help="commit to measure beside the working tree ('' for none)")
    parser.add_argument("--turns", default="100,500,1000", help="RSS marks, in short turns")
    parser.add_argument("--clients", type=int, default=10, help="`ai-coding run` processes for the client's CPU")
    args = parser.parse_args()
    marks = sorted(int(m) for m in args.turns.split(","))
    floor = floor_rss()
    print("floor RSS of one process: " + ", ".join(f"{what} {mb:.1f} MB" for what, mb in floor.items())
          + f" ({load()})")
    base = Path(tempfile.mkdtemp(prefix="aic-fp-", dir="/tmp"))
    try:
        with trees(args.base) as checkout:
            for tree in checkout:
                measure(tree, base, marks, args.clients, floor if tree.label == "head" else None)
            on_demand_cycle(checkout[-1], base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
