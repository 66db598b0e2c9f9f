"""``ai-coding network``: a session's standing grants for the sandbox's egress proxy, from a shell
(the loop's /network): what is allowed and what was refused lately, and allow or revoke a host,
e.g. for a background job that cannot ask."""

from __future__ import annotations

import json

import typer

app = typer.Typer(help="The sandbox's network grants of a session (tools.sandbox.network: proxy).",
                  no_args_is_help=True, add_completion=False)

SessionOpt = typer.Option(..., "--session", help="Session id or a unique prefix (see `ai-coding sessions list`).")
WorkspaceOpt = typer.Option(".", "--workspace", "-w", help="Workspace root (default: current dir).")


def _run(noun: str, workspace: str, session: str, args: str, as_json: bool) -> None:
    from clients.cli.commands.checkpoints import _command

    text, data = _command(f"network {noun}", workspace, session, "network", args)
    print(json.dumps(data, indent=2) if as_json else text)
    if "error" in data:
        raise typer.Exit(1)


@app.command("list")
def list_grants(session: str = SessionOpt, workspace: str = WorkspaceOpt,
                as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """The hosts allowed for the session and the unlisted ones its commands were refused lately."""
    _run("list", workspace, session, "", as_json)


@app.command("allow")
def allow(target: str = typer.Argument(..., help="HOST (ports 80 and 443) or HOST:PORT."),
          session: str = SessionOpt, workspace: str = WorkspaceOpt,
          as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Allow a host the allow-list does not name, for every command of the session (its background
    jobs too) until you revoke it; a deny rule and the address checks still win."""
    _run("allow", workspace, session, f"allow {target}", as_json)


@app.command("revoke")
def revoke(target: str = typer.Argument(..., help="HOST or HOST:PORT, as allowed."),
           session: str = SessionOpt, workspace: str = WorkspaceOpt,
           as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Take a session's grant back."""
    _run("revoke", workspace, session, f"revoke {target}", as_json)
