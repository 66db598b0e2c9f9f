"""``ai-coding trace overview | export | prune``: a workspace's turn traces, read from disk.

No service needs to run: the traces are files under ``<workspace>/.ai-coding/traces/``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer

from clients.cli.commands.common import cli_errors, fail

app = typer.Typer(name="trace", help="Turn traces: overview, export (HTML, OTLP/JSON), prune.", no_args_is_help=True)

WorkspaceOpt = typer.Option(None, "--workspace", "-w", help="Workspace root (default: the current directory).")
OutOpt = typer.Option(None, "--out", help="Write here (default: stdout).")
FORMATS = ("html", "otlp-json")


def _root(workspace: Path | None) -> Path:
    return (workspace or Path.cwd()).expanduser().resolve()


@app.command("overview")
def overview(
    since: float | None = typer.Option(None, "--since", help="Only sessions active within this many days."),
    fmt: str = typer.Option("table", "--format", help="table or json."),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """One row per session (turns, steps, tokens, cache hit rate, cost, age) and a TOTAL row."""
    from clients.cli.trace_view import print_overview
    from services.loop.tracing import overview as ov
    from services.loop.tracing.store import sessions

    if fmt not in ("table", "json"):
        raise fail("trace overview", f"unknown --format {fmt!r}; use table or json")
    rows = ov.overview(sessions(_root(workspace)), time.time(), since)
    print_overview(rows, ov.total(rows), fmt == "json")


@app.command("export")
def export(
    session: str = typer.Option(..., "--session", help="Session id (or a unique prefix)."),
    fmt: str = typer.Option("html", "--format", help="html or otlp-json."),
    out: Path | None = OutOpt,
    full: bool = typer.Option(False, "--full", help="Include message bodies, tool arguments and output."),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """One session's trace as a self-contained HTML page or an OTLP/JSON span tree."""
    from services.loop.tracing.export import render_export
    from services.loop.tracing.store import TraceNotFound, find_session

    if fmt not in FORMATS:
        raise fail("trace export", f"unknown --format {fmt!r}; use one of: {', '.join(FORMATS)}")
    with cli_errors("trace export"):
        try:
            text = render_export(find_session(_root(workspace), session), fmt, full)
        except TraceNotFound as err:
            raise fail("trace export", f"{err}; `ai-coding trace overview` lists them") from None
        if out is None:
            sys.stdout.write(text)
        else:
            out.write_text(text, encoding="utf-8")
            print(f"wrote {out}", file=sys.stderr)


@app.command("prune")
def prune(
    older_than: float = typer.Option(..., "--older-than", help="Remove sessions idle for more than this many days."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be removed; remove nothing."),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """Remove the traces of sessions whose last activity is older than DAYS (same age as overview)."""
    from services.loop.tracing import store

    if older_than < 0:
        raise fail("trace prune", f"--older-than {older_than:g} is negative; give a number of days")
    old = list(store.older_than(store.sessions(_root(workspace)), older_than, time.time()))
    removed = [r.session_id for r in old] if dry_run else store.prune(old)
    verb = "would remove" if dry_run else "removed"
    print(f"{verb} {len(removed)} session trace(s)" + "".join(f"\n  {sid}" for sid in removed))
