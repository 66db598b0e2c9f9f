"""``ai-coding up | down | status | logs``: the services' lifecycle."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

import typer

from clients.cli import exit_codes
from clients.cli.commands.common import cli_errors, fail

SERVICE_NAMES = ("loop", "tools", "memory", "mcp_gateway")


def up(
    foreground: bool = typer.Option(False, "--foreground", help="Run the supervisor in this terminal (systemd does)."),
    timeout: float = typer.Option(20.0, help="Seconds to wait for every service to be SERVING."),
    stay: bool = typer.Option(False, "--stay", help="Keep them running until `ai-coding down` (no idle "
                                                     "shutdown after supervisor.idle_seconds)."),
) -> None:
    """Start the services in the background and wait until each is SERVING; memory and the MCP
    gateway start on demand, with the first call that needs them (supervisor.on_demand), and stop
    again after supervisor.on_demand_idle_seconds (300) without one. They all stop by themselves
    after supervisor.idle_seconds (900) with no client, turn, child or job."""
    from clients.cli import control
    from clients.cli.idle import set_stay

    if foreground:
        from clients.cli.supervise import main as supervise

        if stay:
            with cli_errors("up"):
                set_stay(control.resolve().rdir, True)
        raise typer.Exit(supervise([]))
    with cli_errors("up"):
        setup = control.resolve()
        if stay:
            set_stay(setup.rdir, True)
        # What a turn calls first starts now too (memory, unless loop.memory is off): up gets ready for one.
        first_calls = control.used_at_once(setup, ["loop"])
        started = control.start(setup, timeout=timeout, start_now=first_calls, built=True)
        control.wait_serving(setup, first_calls, timeout=timeout)  # shown below as it then is
        report = control.status_report(setup)
    print(("services started" if started else "services already running")
          + (" (staying until `ai-coding down`):" if stay else ":"))
    for name, svc in report["services"].items():
        print(f"  {name:<12} {svc['health']:<12} {svc['endpoint']}")


def down() -> None:
    """Stop the supervisor and every service it runs (no process is left behind)."""
    from clients.cli import control

    with cli_errors("down"):
        setup = control.resolve_without_config()
        setup.warn_config("down")
        stopped = control.stop(setup)
        from clients.cli.idle import set_stay

        set_stay(setup.rdir, False)
    print("services stopped" if stopped else "no services were running")


def status(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Each service's pid, endpoint, health (asked by this client), restarts and uptime.

    A service on demand that waits for its first call shows ON_DEMAND (it is not asked: that would
    start it). Exits 0 when every service is SERVING or ON_DEMAND, 3 otherwise.
    """
    from clients.cli import control
    from clients.cli.runtime import supervisor_running

    with cli_errors("status"):
        setup = control.resolve_without_config()
        if setup.config_error is not None and not supervisor_running(setup.rdir):
            raise setup.config_error  # nothing runs: fixing the config is all there is to do
        setup.warn_config("status")
        report = control.status_report(setup)
    if as_json:  # exactly the shape issue 2 gives: {"services": {name: {pid, endpoint, health, restarts, uptime_s}}}
        print(json.dumps({"services": report["services"]}, indent=2))
    else:
        sup = report["supervisor"]
        print(f"supervisor: {'running, pid ' + str(sup['pid']) if sup['running'] else 'not running'}"
              f" ({sup['runtime_dir']})")
        print(f"  {'service':<12} {'pid':>7} {'health':<12} {'restarts':>8} {'uptime':>8}  endpoint")
        for name, svc in report["services"].items():
            uptime = f"{svc['uptime_s']:.0f}s" if svc["uptime_s"] is not None else "-"
            print(f"  {name:<12} {svc['pid'] or '-':>7} {svc['health']:<12} {svc['restarts']:>8} {uptime:>8}  "
                  f"{svc['endpoint']}")
    if any(s["health"] not in ("SERVING", control.ON_DEMAND) for s in report["services"].values()):
        raise typer.Exit(exit_codes.UNAVAILABLE)


def logs(
    service: str = typer.Argument(..., help="loop, tools, memory, mcp_gateway or supervisor"),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines."),
    lines: int = typer.Option(50, "--lines", "-n", help="How many lines to show first."),
) -> None:
    """Print a service's log (and follow it with -f)."""
    from clients.cli import control

    if service not in (*SERVICE_NAMES, "supervisor"):
        raise fail("logs", f"unknown service {service!r}; use one of: {', '.join(SERVICE_NAMES)}, supervisor")
    with cli_errors("logs"):
        setup = control.resolve_without_config()
        setup.warn_config("logs")
    path = setup.rdir / "logs" / f"{service}.log"
    if not path.exists() and service in control.on_demand(setup):
        raise fail("logs", f"no log yet at {path}: the {service} service starts on demand, with the first call "
                           "that needs it (supervisor.on_demand), and has not run yet")
    if not path.exists():
        raise fail("logs", f"no log yet at {path}; start the services with `ai-coding up`")
    _print_tail(path, lines)
    if follow:
        with contextlib.suppress(KeyboardInterrupt):
            _follow(path)


def _print_tail(path: Path, lines: int) -> None:
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for line in text[-lines:] if lines > 0 else []:
        print(line)
    sys.stdout.flush()


def _follow(path: Path) -> None:
    with open(path, encoding="utf-8", errors="replace") as fh:
        fh.seek(0, 2)
        while True:
            line = fh.readline()
            if line:
                sys.stdout.write(line)
                sys.stdout.flush()
                continue
            if path.exists() and path.stat().st_size < fh.tell():  # rotated or truncated
                fh.seek(0)
            time.sleep(0.2)


def register(app: typer.Typer) -> None:
    """Add these commands to the main app."""
    app.command()(up)
    app.command()(down)
    app.command()(status)
    app.command()(logs)
