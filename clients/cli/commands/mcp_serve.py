"""``ai-coding mcp serve``: the agent as an MCP server (stdio by default, Streamable HTTP with --http).

Import-light like the rest of the CLI: the ``mcp`` SDK is imported inside the command's body.
"""

from __future__ import annotations

from typing import Annotated

import typer

from clients.cli.commands.common import fail


def parse_http(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (or just ``PORT``, on 127.0.0.1) for --http."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--http {value!r} is not HOST:PORT; pass e.g. 127.0.0.1:8765")
    return host.strip("[]") or "127.0.0.1", int(port)


def serve(
    workspace: Annotated[list[str] | None, typer.Option(
        "--workspace", "-w", metavar="DIR",
        help="A workspace callers may run tasks in (repeatable; default: the git root above the current dir, "
             "else the current dir). Nothing outside these is reachable.")] = None,
    permission_mode: str = typer.Option(
        "confirm", "--permission-mode",
        help="The most a caller may ask for: readonly (no changes), confirm (changes asked through "
             "elicitation), or auto (changes run without asking)."),
    model: str = typer.Option("", "--model", "-m", help="Model name from the config's models table."),
    http: str = typer.Option("", "--http", metavar="HOST:PORT",
                             help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio."),
) -> None:
    """Serve this agent over MCP: other agents call its run_task tool (`claude mcp add ai-coding --
    ai-coding mcp serve`)."""
    from pathlib import Path

    from clients.cli import headless
    from clients.cli.agent_server import policy

    try:
        ceiling = policy.parse_mode(permission_mode, "--permission-mode")
        address = parse_http(http) if http else None
    except ValueError as err:
        raise fail("mcp serve", str(err)) from None
    roots = [Path(w).expanduser().resolve() for w in workspace or []] or [headless.default_workspace()]
    missing = [str(r) for r in roots if not r.is_dir()]
    if missing:
        raise fail("mcp serve", f"workspace {missing[0]} is not a directory; pass an existing one with -w")
    from clients.cli.agent_server import server

    server.run(server.ServeOptions(roots=roots, ceiling=ceiling, model=model), address)
