"""``ai-coding checkpoints list`` and ``ai-coding rewind``: a session's checkpoints, and a rewind
of its code and/or conversation (the loop's /checkpoints and /rewind, from the command line)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

app = typer.Typer(help="Checkpoints of a session's workspace (taken before every changing step).",
                  no_args_is_help=True, add_completion=False)


def _command(noun: str, workspace: str, session: str, command: str, args: str) -> tuple[str, dict[str, object]]:
    """Run a loop slash command on the session ``session`` (an id or a unique prefix)."""
    from clients.cli.commands.common import cli_errors, fail
    from clients.cli.commands.sessions import _loop_call

    root = Path(workspace).expanduser().resolve()
    if not root.is_dir():
        raise fail(noun, f"workspace {workspace} is not a directory; pass an existing one with -w")

    async def call(client: object) -> tuple[str, str]:
        from clients.cli.connection.loop import ClientError, LoopClient

        assert isinstance(client, LoopClient)
        found = await client.get_session(str(root), session)
        sid = found.summary.session_id
        try:
            reply = await client.run_command(sid, command, args)
        except ClientError as err:
            if err.status != "not_found":
                raise
            # Saved but not open in this loop (it restarted): open it, without a terminal of its own.
            await client.open_session(str(root), sid, interactive=False)
            reply = await client.run_command(sid, command, args)
        return reply.text, reply.data_json

    with cli_errors(noun):
        text, raw = _loop_call(root, call)
    try:
        data = json.loads(raw or "{}")
    except ValueError:
        data = {}
    return text, data if isinstance(data, dict) else {}


@app.command("list")
def list_checkpoints(
    session: str = typer.Option(..., "--session", help="Session id or a unique prefix (see `ai-coding sessions list`)."),
    workspace: str = typer.Option(".", "--workspace", "-w", help="Workspace root (default: current dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print the steps as JSON."),
) -> None:
    """The session's turns and changing steps: time, prompt, files changed with +/- lines."""
    text, data = _command("checkpoints list", workspace, session, "checkpoints", "")
    print(json.dumps(data, indent=2) if as_json else text)
    if "error" in data:
        raise typer.Exit(1)


def rewind(
    session: str = typer.Option(..., "--session", help="Session id or a unique prefix."),
    to: str = typer.Option(..., "--to", help="TURN (keep turns 1..TURN) or TURN.STEP (the code just before that step)."),
    code: bool = typer.Option(False, "--code", help="Rewind only the files."),
    conversation: bool = typer.Option(False, "--conversation", help="Rewind only the conversation."),
    force: bool = typer.Option(False, "--force", help="Also overwrite files changed since the agent's last step."),
    workspace: str = typer.Option(".", "--workspace", "-w", help="Workspace root (default: current dir)."),
) -> None:
    """Rewind a session's workspace and/or conversation to a turn (both unless one is named).
    Files you changed since the agent's last step are kept and named unless --force."""
    flags = [f for f, on in (("--code", code), ("--conversation", conversation), ("--force", force)) if on]
    text, data = _command("rewind", workspace, session, "rewind", " ".join([to, *flags]))
    print(text)
    if "error" in data:
        print(f"ai-coding rewind: {text.splitlines()[0] if text else 'failed'}", file=sys.stderr)
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    root.command("rewind")(rewind)
