"""``ai-coding acp`` start-up: from the editor's spawn to the answer of ``initialize``, services up.

    .venv/bin/python bench/acp.py [--runs N]

Prints the median and worst of N spawns (the console script, as an editor starts it), beside
``ai-coding --version`` (the client's own start-up floor) and a bare ``python -c pass``, and then
``session/new`` after ``initialize`` on a warm loop (the first call that needs grpc and the loop).
Target (issue 31): spawn to ``initialize`` answer < 300 ms on 2 cores with services up.
Everything runs in a private HOME and runtime dir; nothing a user runs is touched.
"""

from __future__ import annotations

import argparse
import json
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


def _line(message: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def spawn_to_initialize(env: dict[str, str], cwd: Path, new_session: bool) -> tuple[float, float]:
    """(seconds to the initialize answer, seconds from then to the session/new answer, 0 when skipped)."""
    start = time.perf_counter()
    proc = subprocess.Popen([CLI, "acp"], env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_line({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}}))
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    initialized = time.perf_counter()
    assert answer.get("id") == 1 and "result" in answer, answer
    session = 0.0
    if new_session:
        proc.stdin.write(_line({"id": 2, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}}))
        proc.stdin.flush()
        while "id" not in (reply := json.loads(proc.stdout.readline())):
            pass
        assert "result" in reply, reply
        session = time.perf_counter() - initialized
    proc.stdin.close()
    proc.wait(timeout=30)
    return initialized - start, session


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="aic-bench-acp-") as tmp:
        home = Path(tmp) / "home"
        (home / ".config").mkdir(parents=True)
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        config = home / "bench-config.yaml"
        config.write_text("default_model: fake\nmodels:\n  fake:\n    provider: generic\n    model: fake-model\n"
                          "    base_url: http://127.0.0.1:9/v1\n    api_key: unused\n")
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                   AI_CODING_RUNTIME_DIR=str(Path(tmp) / "run"), AI_CODING_CONFIG=str(config))
        subprocess.run([CLI, "up"], env=env, check=True, capture_output=True)
        try:
            spawn_to_initialize(env, workspace, new_session=True)  # warm the page cache and the loop
            inits = [spawn_to_initialize(env, workspace, new_session=False)[0] for _ in range(runs)]
            sessions = [spawn_to_initialize(env, workspace, new_session=True)[1] for _ in range(max(3, runs // 3))]
            version = [timed([CLI, "--version"], env) for _ in range(runs)]
            bare = [timed([sys.executable, "-c", "pass"], env) for _ in range(runs)]
        finally:
            subprocess.run([CLI, "down"], env=env, check=False, capture_output=True)
    ms = 1000.0
    print(f"acp spawn -> initialize answer: median {statistics.median(inits) * ms:.0f} ms, "
          f"worst {max(inits) * ms:.0f} ms over {runs} spawns (target < 300 ms)")
    print(f"ai-coding --version:            median {statistics.median(version) * ms:.0f} ms")
    print(f"python -c pass:                 median {statistics.median(bare) * ms:.0f} ms")
    print(f"initialize -> session/new answer (warm loop, grpc loaded on demand): "
          f"median {statistics.median(sessions) * ms:.0f} ms over {len(sessions)}")


if __name__ == "__main__":
    main()
