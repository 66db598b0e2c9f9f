"""``ai-coding memory list | search | show | pin | forget``: long-term notes of a workspace, for scripts.

Import-light: grpc and the generated stubs are imported inside command bodies.
The workspace defaults to the current directory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from clients.cli import exit_codes
from clients.cli import services_view as view
from clients.cli.commands.common import service_stub

app = typer.Typer(name="memory", help="Long-term memory notes: list, search, show, pin, forget.", no_args_is_help=True)

WorkspaceOpt = typer.Option(None, "--workspace", "-w", help="Workspace root (default: the current directory).")
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text.")


def _workspace(path: Path | None) -> str:
    return str((path or Path.cwd()).resolve())


@contextmanager
def _memory(command: str) -> Iterator[Any]:
    """A stub to the running memory service; RPC failures become one line and an exit code."""
    from ai_coding.v1 import memory_pb2_grpc

    with service_stub("memory", command, "memory", "the memory service", memory_pb2_grpc.MemoryStub) as stub:
        yield stub


@app.command("list")
def list_notes(
    kind: str = typer.Option("", "--kind", help="Only this kind (fact, decision, preference, ...)."),
    limit: int = typer.Option(0, "--limit", help="At most this many notes (0 = all)."),
    workspace: Path | None = WorkspaceOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Notes grouped by kind, newest first (* = pinned, digit = importance)."""
    with _memory("list") as stub:
        notes = stub.ListNotes(view.list_request(_workspace(workspace), kind, limit), timeout=view.RPC_TIMEOUT).notes
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
    request = view.recall_request(_workspace(workspace), query, k, kind, scene)
    with _memory("search") as stub:
        resp = stub.Recall(request, timeout=30)
    if as_json:
        hits = [{"note": view.note_fields(h.note), "score": h.score, "relevance": h.relevance,
                 "matched_terms": list(h.matched_terms)} for h in resp.hits]
        print(json.dumps({"hits": hits, "diagnostics": json.loads(resp.diagnostics_json)}, ensure_ascii=False))
        return
    print(resp.rendered)


@app.command("show")
def show(note_id: str = typer.Argument(..., help="Note id."), workspace: Path | None = WorkspaceOpt,
         as_json: bool = JsonOpt) -> None:
    """Every field of one note."""
    from ai_coding.v1 import memory_pb2 as pb

    with _memory("show") as stub:
        note = stub.GetNote(pb.GetNoteRequest(workspace=_workspace(workspace), id=note_id), timeout=30).note
    fields = view.note_fields(note)
    if as_json:
        print(json.dumps(fields, ensure_ascii=False))
        return
    for line in view.field_lines(fields):
        print(line)


@app.command("pin")
def pin(note_id: str = typer.Argument(..., help="Note id."),
        unpin: bool = typer.Option(False, "--unpin", help="Remove the pin instead."),
        workspace: Path | None = WorkspaceOpt) -> None:
    """Pin a note so it is always in the <memory-constraints> block and never evicted."""
    from ai_coding.v1 import memory_pb2 as pb

    with _memory("pin") as stub:
        note = stub.PinNote(pb.PinNoteRequest(workspace=_workspace(workspace), id=note_id, pinned=not unpin), timeout=30).note
    print(f"{'unpinned' if unpin else 'pinned'} {note.id}: {note.text}")


@app.command("forget")
def forget(note_id: str = typer.Argument(..., help="Note id."),
           yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
           workspace: Path | None = WorkspaceOpt) -> None:
    """Delete a note (asks first unless --yes)."""
    from ai_coding.v1 import memory_pb2 as pb

    ws = _workspace(workspace)
    with _memory("forget") as stub:
        note = stub.GetNote(pb.GetNoteRequest(workspace=ws, id=note_id), timeout=30).note
        if not yes and not typer.confirm(f"forget {note.id}: {note.text}?", default=False):
            print("kept")
            raise typer.Exit(exit_codes.OK)
        stub.ForgetNote(pb.ForgetNoteRequest(workspace=ws, id=note_id), timeout=30)
    print(f"forgot {note_id}")
