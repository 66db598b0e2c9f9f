"""What the idle shutdown trades: the cost of a cold start against memory held while idle.

    .venv/bin/python bench/idle.py [--runs N]

Prints the median wall time of ``ai-coding run "hi"`` against the fake model with the services
down (the run starts them: the cold start a user pays after an idle shutdown) and with them up,
their difference, and the resident memory (RSS) of the supervisor and the four services while
idle. supervisor.idle_seconds (default 900 s) is picked from these: one cold start per quarter
hour of pause costs under 1 % of that pause. Private HOME and runtime dir; nothing a user runs
is touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

from services.fake_model import FakeModelServer  # noqa: E402


def cli(env: dict[str, str], *args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "clients.cli.main", *args], env=env, check=True, capture_output=True,
                   stdin=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def rss_mb(rdir: Path) -> float:
    marker = f"AI_CODING_RUNTIME_DIR={rdir}".encode()
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if marker not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="aic-bidle-", dir="/tmp"))
    os.chmod(base, 0o700)
    model = FakeModelServer([{"text": "hi", "repeat": "forever"}]).start()
    config = base / "config.yaml"
    config.write_text(f"models:\n  m: {{provider: generic, model: fake-model, base_url: '{model.url}', "
                      "api_key: x}\nloop: {harvest: false}\n")
    (base / "ws").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_CODING_")}
    env.update(HOME=str(base), AI_CODING_CONFIG=str(config), AI_CODING_RUNTIME_DIR=str(base / "run"))
    run = ("run", "-w", str(base / "ws"), "hi")
    try:
        cold, warm = [], []
        for _ in range(args.runs):
            cli(env, "down")
            cold.append(cli(env, *run))
            warm.append(cli(env, *run))
        memory = rss_mb(base / "run")
    finally:
        cli(env, "down")
        model.stop()
        shutil.rmtree(base, ignore_errors=True)
    c, w = statistics.median(cold), statistics.median(warm)
    print(f"run with services down (cold): {c:.2f} s median of {args.runs}")
    print(f"run with services up (warm):   {w:.2f} s")
    print(f"cold-start cost:               {c - w:.2f} s")
    print(f"RSS of supervisor + services while idle: {memory:.0f} MB")
    print(f"at idle_seconds=900 one cold start costs {100 * (c - w) / 900:.2f} % of the pause before it")


if __name__ == "__main__":
    main()
