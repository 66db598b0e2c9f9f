"""The ``ai-coding`` console script's first step: two commands answered before the typer app exists.

``ai-coding --version`` and ``ai-coding serve NAME`` (what the supervisor starts for each service)
are answered here without importing typer or building the command tree (~30 ms of each start,
bench/startup.py); everything else, including every other spelling of these two (options before
them, ``--help``), goes to :func:`clients.cli.main.main` unchanged.
"""

from __future__ import annotations

import sys


def fast_path(args: list[str]) -> str:
    """``version`` or ``serve`` when ``args`` is exactly one of the two commands answered here, else ""."""
    if args in (["--version"], ["-V"]):
        return "version"
    if len(args) == 2 and args[0] == "serve" and args[1] in ("loop", "tools", "memory", "mcp_gateway"):
        return "serve"
    return ""


def main() -> None:
    args = sys.argv[1:]
    how = fast_path(args)
    if how == "version":
        from services.kernel import __version__

        print(f"ai-coding {__version__}")
        return
    if how == "serve":
        import importlib

        from services.kernel.server import run_service

        module = importlib.import_module(f"services.{args[1]}.main")
        sys.exit(run_service(module.build, args[1]))
    from clients.cli.main import main as full

    full()


if __name__ == "__main__":
    main()
