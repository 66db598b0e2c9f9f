"""``ai-coding sessions list|show``: the saved sessions of a workspace, and one session's history."""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import typer

from clients.cli.repl.resume import SessionRow, day_label, row_line

if TYPE_CHECKING:
    from clients.cli.connection.loop import LoopClient
    from clients.cli.session_views import SessionList, UnreadableSession

T = TypeVar("T")

app = typer.Typer(help="Saved sessions of a workspace.", no_args_is_help=True, add_completion=False)


def _loop_call(workspace: Path, body: Callable[[LoopClient], Awaitable[T]]) -> T:
    """Run ``body(client)`` against the workspace's loop service, starting the services if needed."""
    from clients.cli import connection, control
    from clients.cli.connection.loop import LoopClient

    setup = control.resolve(workspace)
    control.ensure_running(setup, ["loop"], quiet=True)

    async def run() -> T:
        client = LoopClient(setup.endpoints["loop"])
        try:
            return await body(client)
        finally:
            await client.close()

    return connection.run(run())


def session_rows(workspace: Path, *, warn_unreadable: bool = False) -> list[SessionRow]:
    """Ask the loop for the workspace's sessions, newest activity first. ``warn_unreadable``: print a
    line for each session that cannot be read (--continue would otherwise pick an older one silently)."""
    listed = _loop_call(workspace, lambda client: client.session_list(str(workspace)))
    if warn_unreadable:
        for entry in listed.unreadable:
            print(f"warning: {unreadable_line(entry)} It is skipped.", file=sys.stderr)
    return _rows(listed)


def _rows(listed: SessionList) -> list[SessionRow]:
    return [SessionRow(s.session_id, s.last_activity, s.preview, s.message_count, s.open) for s in listed.sessions]


def unreadable_line(entry: UnreadableSession) -> str:
    """One line for a session that cannot be read: which file, why, what to do."""
    return f"session {entry.session_id} cannot be read ({entry.path}): {entry.reason}. {entry.hint}".strip()


@app.command("list")
def list_sessions(
    workspace: str = typer.Option(".", "--workspace", "-w", help="Workspace root (default: current dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array instead of a table."),
) -> None:
    """List sessions, newest activity first, with the first user message and message count.

    A session whose files cannot be read is one line on stderr (the file and what to do) and the
    command exits 1; the readable ones are still listed."""
    from rich.console import Console

    from clients.cli import exit_codes
    from clients.cli.commands.common import cli_errors, fail
    from clients.cli.textsafe import literal

    root = Path(workspace).expanduser().resolve()
    if not root.is_dir():
        raise fail("sessions list", f"workspace {workspace} is not a directory; pass an existing one with -w")
    with cli_errors("sessions list"):
        listed = _loop_call(root, lambda client: client.session_list(str(root)))
    rows = _rows(listed)
    if as_json:
        data = [{"id": r.session_id, "last_activity": r.last_activity, "preview": r.preview,
                 "messages": r.message_count, "open": r.open} for r in rows]
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        console = Console(highlight=False)
        if not rows and not listed.unreadable:
            console.print(literal("no saved sessions"))
        today = datetime.date.today()
        for row in rows:
            mark = " (open)" if row.open else ""
            console.print(literal(f"{day_label(row.last_activity, today):<10} {row_line(row)}{mark}"),
                          soft_wrap=True)
    for entry in listed.unreadable:
        print(f"ai-coding sessions list: {unreadable_line(entry)}", file=sys.stderr)
    if listed.unreadable:
        raise typer.Exit(exit_codes.FAILED)


@app.command("show")
def show_session(
    session: str = typer.Argument(..., help="Session id or a unique prefix of it (see `ai-coding sessions list`)."),
    workspace: str = typer.Option(".", "--workspace", "-w", help="Workspace root (default: current dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print the saved messages as JSON (the session format)."),
) -> None:
    """Print a saved session's history: your messages, the model's answers, one line per tool call."""
    from rich.console import Console

    from clients.cli.commands.common import cli_errors, fail
    from clients.cli.repl.resume import history_items, history_lines, plan_lines
    from clients.cli.textsafe import literal

    root = Path(workspace).expanduser().resolve()
    if not root.is_dir():
        raise fail("sessions show", f"workspace {workspace} is not a directory; pass an existing one with -w")
    with cli_errors("sessions show"):
        response = _loop_call(root, lambda client: client.get_session(str(root), session))
    if as_json:
        print(json.dumps(json.loads(response.messages_json or "[]"), ensure_ascii=False, indent=2))
        return
    console = Console(highlight=False)
    summary = response.summary
    console.print(literal(f"session {summary.session_id} · {summary.message_count} messages", "dim"))
    for text, style in history_lines(history_items(response.messages_json), plan_lines(response.plan_json)):
        console.print(literal(text, style), soft_wrap=True)
