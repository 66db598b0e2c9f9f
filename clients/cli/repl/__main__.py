"""``python -m clients.cli.repl [-w DIR] [--session ID] [--attach]``: the REPL without the Typer app."""

from __future__ import annotations

import argparse
import sys

from clients.cli.repl import run_repl


def main(argv: list[str] | None = None) -> int:
    """Parse ``-w``, ``--session``, ``--attach`` and run the REPL; the exit code."""
    parser = argparse.ArgumentParser(prog="python -m clients.cli.repl", description="the interactive client")
    parser.add_argument("-w", "--workspace", default=None, help="workspace root (default: current dir)")
    parser.add_argument("--session", default=None, help="session id or unique prefix to continue")
    parser.add_argument("--attach", action="store_true", help="follow a session another client drives")
    args = parser.parse_args(argv)
    return run_repl(args.workspace, args.session, attach=args.attach)


if __name__ == "__main__":
    sys.exit(main())
