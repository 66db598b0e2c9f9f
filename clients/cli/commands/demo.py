"""``ai-coding demo``: watch the agent fix a bug, against a scripted model."""

from __future__ import annotations

import typer

from clients.cli.commands.common import cli_errors


def demo(keep: bool = typer.Option(False, "--keep", help="Keep the demo workspace afterwards.")) -> None:
    """Copy a small project with a failing test, let the agent fix it through the real services
    (the model is a scripted replay), then show how to use a real model."""
    from clients.cli.demo import run_demo

    with cli_errors("demo"):
        code = run_demo(keep=keep)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the main app."""
    app.command()(demo)
