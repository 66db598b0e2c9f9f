"""``ai-coding config init | path | show``: the user configuration file.

Import-light: only typer at import time; each command imports the kernel's
config module inside its body (no grpc, no openai).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from clients.cli.commands.common import cli_errors

BUILT_IN_NOTES = {
    "ai.bash_policy.deny": "on top of the built-in deny list (sudo, rm -rf /, ...), which always holds",
}
"""Keys whose shown value is not all that applies: a reader of `config show` must not think an
empty list means nothing is refused."""

app = typer.Typer(help="Create, locate and inspect the configuration.", no_args_is_help=True, add_completion=False)


@app.command()
def init(
    provider: str = typer.Option("", "--provider", help="openai, deepseek, qwen, ollama or generic (any "
                                 "OpenAI-compatible URL): write a working config for it, after one test request."),
    model: str = typer.Option("", "--model", help="The model id (with --provider)."),
    base_url: str = typer.Option("", "--base-url", help="The endpoint (default: the provider's; generic needs it)."),
    api_key_env: str = typer.Option("", "--api-key-env", metavar="VAR",
                                    help="The variable holding the key (default: the provider's, e.g. "
                                         "DEEPSEEK_API_KEY); the config says ${VAR}."),
    check: bool = typer.Option(True, "--check/--no-check", help="Send one test request before writing."),
) -> None:
    """Without options: write a commented template (0600 in a 0700 directory). With --provider and
    --model: write a config that works, tested first. Never overwrites configured models."""
    from services.kernel.config import USER_CONFIG_TEMPLATE, init_user_config

    if provider or model:
        from clients.cli.setup.direct import InitOptions, init_direct

        with cli_errors("config init"):
            written = init_direct(InitOptions(provider, model, base_url, api_key_env, check))
        print(f"wrote {written}: model {model} via {provider}" + ("" if check else " (not tested)"))
        return
    with cli_errors("config init"):
        path = init_user_config()
    print(f"wrote {path}\n")
    print(USER_CONFIG_TEMPLATE, end="")
    print("\n# Nothing above is active yet: uncomment a model, or run `ai-coding setup` (it asks), or "
          "`ai-coding config init --provider NAME --model ID`.", file=sys.stderr)


@app.command()
def path(
    workspace: str = typer.Option(".", "--workspace", "-w", help="Also list this workspace's project files."),
) -> None:
    """Print where the user config lives, then the project files found for the workspace."""
    from services.kernel.config import find_project_files, user_config_path

    user = user_config_path()
    print(user if user.exists() else f"{user} (not created yet: run `ai-coding config init`)")
    for found in find_project_files(Path(workspace)):
        print(f"{found} (project layer)")


@app.command()
def show(
    workspace: str = typer.Option(".", "--workspace", "-w", help="Workspace whose project layer applies."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of [key, value, source]."),
) -> None:
    """Print every effective value with the layer it came from (secrets masked)."""
    from services.kernel.config import effective_config_report, load_config
    from services.loop.policy.settings import LoopSettings

    with cli_errors("config show"):
        config = load_config(Path(workspace))
        rows = effective_config_report(config, {"ai": LoopSettings})
    if as_json:
        print(json.dumps([list(r) for r in rows], default=str))
        return
    for key, value, source in rows:
        note = BUILT_IN_NOTES.get(key, "")
        print(f"{key} = {json.dumps(value, default=str)}  [{source}]" + (f"  ({note})" if note else ""))
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for note in config.notes:
        print(f"note: {note}", file=sys.stderr)
