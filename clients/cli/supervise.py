"""The supervisor process: ``python -m clients.cli.supervise`` (what ``ai-coding up`` starts in the
background) or ``ai-coding up --foreground`` (what the systemd unit runs).

Kept apart from the Typer app so the background process imports only what it needs: every
millisecond here delays the moment the services start.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Resolve the config and supervise until SIGTERM; one line and exit 2 on bad input.

    ``--start memory,mcp_gateway``: services on demand to start at once all the same (a client that
    starts the supervisor for a turn that will use them)."""
    from clients.cli import control
    from clients.cli.supervisor import LockHeld, run_foreground
    from services.kernel.errors import AiCodingError

    args = sys.argv[1:] if argv is None else argv
    start_now = args[1].split(",") if len(args) == 2 and args[0] == "--start" else []
    try:
        setup = control.resolve()
        return run_foreground(setup.rdir, setup.supervisor, {n: str(e) for n, e in setup.endpoints.items()},
                              start_now=start_now)
    except (LockHeld, AiCodingError) as exc:
        print(f"ai-coding up: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
