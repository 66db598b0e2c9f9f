"""Run the real Supervisor over minimal_service.py processes: ``python run_supervisor.py RUNTIME_DIR``.

``AIC_TEST_ON_DEMAND``: services to run on demand (comma-separated; none when unset, so the other
tests see every service started at once); ``AIC_TEST_ON_DEMAND_IDLE``: their idle seconds;
``AIC_TEST_START_NOW``: those of them to start at once all the same.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from clients.cli.supervisor import ALL_SERVICES, LockHeld, Supervisor, SupervisorConfig
from services.kernel.logs import setup_logging

SERVICE = str(Path(__file__).with_name("minimal_service.py"))

if __name__ == "__main__":
    rdir = Path(sys.argv[1])
    setup_logging("supervisor", rdir / "logs")
    names = [n for n in os.environ.get("AIC_TEST_ON_DEMAND", "").split(",") if n]
    config = SupervisorConfig(grace_seconds=3.0, backoff_initial_seconds=0.5, backoff_max_seconds=4.0,
                              on_demand=names,
                              on_demand_idle_seconds=float(os.environ.get("AIC_TEST_ON_DEMAND_IDLE", "300")))
    endpoints = {name: f"unix://{rdir}/{name}.sock" for name in ALL_SERVICES}
    start_now = [n for n in os.environ.get("AIC_TEST_START_NOW", "").split(",") if n]
    try:
        sys.exit(Supervisor(rdir, config, endpoints, command=lambda n: [sys.executable, SERVICE, n],
                            start_now=start_now).run())
    except LockHeld as exc:
        print(f"ai-coding up: {exc}", file=sys.stderr)
        sys.exit(2)
