"""Starting the REPL: services up, the loop's endpoint, and the process boundary (no traceback for users)."""

from __future__ import annotations

import sys
from pathlib import Path

from clients.cli import connection
from clients.cli.connection.loop import LoopClient
from clients.cli.connection.services import ServiceClients
from clients.cli.headless import workspace_and_cwd
from clients.cli.repl.app import Repl
from clients.cli.repl.recovery import needed_services
from clients.cli.repl.terminal import log_crash
from services.kernel.endpoints import Endpoint


def _endpoints(workspace: Path, quiet: bool = False) -> tuple[dict[str, Endpoint], Path]:
    """Start the services when they are not running; every service's endpoint and the client's log file."""
    from clients.cli import control

    setup = control.resolve(workspace)
    control.refuse_workspace(setup, workspace)
    control.ensure_running(setup, needed_services(setup), quiet=quiet)
    return setup.endpoints, setup.rdir / "logs" / "client.log"


def run_repl(workspace: Path | str | None = None, session_id: str | None = None, attach: bool = False,
             first_message: str = "") -> int:
    """Open the interactive client on ``workspace`` (default: the git root, else the current dir); the exit code.
    ``first_message`` is sent as the session's first input (``ai-coding "PROMPT"``)."""
    from services.kernel.errors import AiCodingError

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("ai-coding: the interactive client needs a terminal; for scripts use `ai-coding run \"PROMPT\"`",
              file=sys.stderr)
        return 2
    root, cwd = workspace_and_cwd(str(workspace or ""))
    if not root.is_dir():
        print(f"ai-coding: workspace {root} is not a directory; pass an existing one with -w", file=sys.stderr)
        return 2
    try:
        endpoints, log_path = _endpoints(root)
    except AiCodingError as err:
        print(f"ai-coding: {err}", file=sys.stderr)
        return 3

    async def main() -> int:
        services = ServiceClients(endpoints["memory"], endpoints["mcp_gateway"], str(root))
        repl = Repl(LoopClient(endpoints["loop"], cwd=str(cwd)), str(root), attach=attach, log_path=log_path, services=services)
        return await repl.run(session_id or "", first_message)

    try:
        return connection.run(main())  # the process's one loop (`-c` listed sessions on it first)
    except KeyboardInterrupt:  # Ctrl-C before the prompt took over the terminal
        return 130
    except AiCodingError as err:
        print(f"ai-coding: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # the process boundary: one line for the user, the traceback in the log
        log_crash(log_path, err)
        print(f"ai-coding: the client stopped on an unexpected error: {type(err).__name__}: {err} "
              f"(details in {log_path})", file=sys.stderr)
        return 1
