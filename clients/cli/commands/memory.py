"""``ai-coding memory list | search | show | pin | forget``: long-term notes of a workspace, for scripts.

Import-light: grpc is imported inside command bodies (through ``clients.cli.connection``).
The workspace defaults to the current directory.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import typer

from clients.cli import exit_codes
from clients.cli import services_view as view
from clients.cli.commands.common import service_call

if TYPE_CHECKING:
    from clients.cli.connection.services import MemoryClient

T = TypeVar("T")

app = typer.Typer(name="memory", help="Long-term memory notes: list, search, show, pin, forget.", no_args_is_help=True)

WorkspaceOpt = typer.Option(None, "--workspace", "-w", help="Workspace root (default: the current directory).")
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text.")


def _workspace(path: Path | None) -> str:
    return str((path or Path.cwd()).resolve())


def _memory(command: str, workspace: Path | None, body: Callable[[MemoryClient], Awaitable[T]]) -> T:
    """``body`` against the running memory service; failures become one line and an exit code."""
    from clients.cli.connection.services import MemoryClient

    ws = _workspace(workspace)
    return service_call("memory", command, "memory", "the memory service",
                        lambda endpoint: MemoryClient(endpoint, ws), body)


@app.command("list")
def list_notes(
    kind: str = typer.Option("", "--kind", help="Only this kind (fact, decision, preference, ...)."),
    limit: int = typer.Option(0, "--limit", help="At most this many notes (0 = all)."),
    workspace: Path | None = WorkspaceOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Notes grouped by kind, newest first (* = pinned, digit = importance)."""
    notes = _memory("list", workspace, lambda client: client.list_notes(kind, limit))
    if as_json:
        print(json.dumps({"notes": [view.note_fields(n) for n in notes]}, ensure_ascii=False))
        return
    for line in view.overview_lines(notes):
        print(line)


@app.command("search")
def search(
    query: str = typer.Argument(..., help="What to look for."),
    k: int = typer.Option(5, "--k", help="At most this many notes."),
    kind: str = typer.Option("", "--kind", help="Only this kind."),
    scene: str = typer.Option("", "--scene", help="Only this scene label."),
    workspace: Path | None = WorkspaceOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Ranked recall with the same gates the model's memory_search uses (does not count as a use)."""
    resp = _memory("search", workspace, lambda client: client.recall(query, k, kind, scene))
    if as_json:
        hits = [{"note": view.note_fields(h.note), "score": h.score, "relevance": h.relevance,
                 "matched_terms": list(h.matched_terms)} for h in resp.hits]
        print(json.dumps({"hits": hits, "diagnostics": json.loads(resp.diagnostics_json)}, ensure_ascii=False))
        return
    print(resp.rendered)


@app.command("show")
def show(note_id: str = typer.Argument(..., help="Note id (or its first 4+ characters)."), workspace: Path | None = WorkspaceOpt,
         as_json: bool = JsonOpt) -> None:
    """Every field of one note."""
    fields = view.note_fields(_memory("show", workspace, lambda client: client.get(note_id)))
    if as_json:
        print(json.dumps(fields, ensure_ascii=False))
        return
    for line in view.field_lines(fields):
        print(line)


@app.command("pin")
def pin(note_id: str = typer.Argument(..., help="Note id (or its first 4+ characters)."),
        unpin: bool = typer.Option(False, "--unpin", help="Remove the pin instead."),
        workspace: Path | None = WorkspaceOpt) -> None:
    """Pin a note so it is always in the <memory-constraints> block and never evicted."""
    note = _memory("pin", workspace, lambda client: client.pin(note_id, pinned=not unpin))
    print(f"{'unpinned' if unpin else 'pinned'} {note.id}: {note.text}")


@app.command("forget")
def forget(note_id: str = typer.Argument(..., help="Note id (or its first 4+ characters)."),
           yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
           workspace: Path | None = WorkspaceOpt) -> None:
    """Delete a note (asks first unless --yes)."""

    async def body(client: MemoryClient) -> bool:
        note = await client.get(note_id)
        if not yes and not typer.confirm(f"forget {note.id}: {note.text}?", default=False):
            return False
        await client.forget(note.id)
        return True

    if not _memory("forget", workspace, body):
        print("kept")
        raise typer.Exit(exit_codes.OK)
    print(f"forgot {note_id}")  # as typed: the full id was in the confirmation
