"""Run the real Supervisor over minimal_service.py processes: ``python run_supervisor.py RUNTIME_DIR``."""

from __future__ import annotations

import sys
from pathlib import Path

from clients.cli.supervisor import ALL_SERVICES, LockHeld, Supervisor, SupervisorConfig
from services.kernel.logs import setup_logging

SERVICE = str(Path(__file__).with_name("minimal_service.py"))

if __name__ == "__main__":
    rdir = Path(sys.argv[1])
    setup_logging("supervisor", rdir / "logs")
    config = SupervisorConfig(grace_seconds=3.0, backoff_initial_seconds=0.5, backoff_max_seconds=4.0)
    endpoints = {name: f"unix://{rdir}/{name}.sock" for name in ALL_SERVICES}
    try:
        sys.exit(Supervisor(rdir, config, endpoints, command=lambda n: [sys.executable, SERVICE, n]).run())
    except LockHeld as exc:
        print(f"ai-coding up: {exc}", file=sys.stderr)
        sys.exit(2)
