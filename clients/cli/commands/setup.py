"""``ai-coding setup`` (the first-run questions, on demand) and ``ai-coding doctor``."""

from __future__ import annotations

import sys

import typer

from clients.cli import exit_codes


def setup() -> None:
    """Ask for a provider, key and model, test one request, and write the user config."""
    from clients.cli.setup.choices import existing_models
    from clients.cli.setup.wizard import main_setup
    from services.kernel.config import user_config_path

    path = user_config_path()
    names = existing_models(path)
    if names:
        print(f"ai-coding setup: {path} already configures model(s) {', '.join(names)}; edit it (or move it "
              "aside and run `ai-coding setup` again)", file=sys.stderr)
        raise typer.Exit(exit_codes.USAGE)
    if not sys.stdin.isatty():
        print("ai-coding setup: the questions need a terminal; without one use `ai-coding config init "
              "--provider NAME --model ID`", file=sys.stderr)
        raise typer.Exit(exit_codes.USAGE)
    raise typer.Exit(main_setup())


def doctor(
    workspace: str = typer.Option("", "--workspace", "-w", help="Workspace whose project config applies."),
) -> None:
    """Check the config, the model's key and endpoint, bubblewrap, the runtime dir and the services;
    say what to fix. Exits 1 when something would stop a run."""
    from clients.cli.headless import workspace_and_cwd
    from clients.cli.setup.doctor import Status, render, run_checks

    root, _ = workspace_and_cwd(workspace)
    checks = run_checks(root)
    for check in checks:
        for line in render(check):
            print(line)
    failed = [c for c in checks if c.status is Status.FAIL]
    print(f"{len(failed)} problem(s) to fix" if failed else "everything a run needs is in place")
    raise typer.Exit(exit_codes.FAILED if failed else exit_codes.OK)


def register(app: typer.Typer) -> None:
    """Add these commands to the main app."""
    app.command()(setup)
    app.command()(doctor)
