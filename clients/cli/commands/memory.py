"""``ai-coding memory list | search | show | pin | forget``: long-term notes of a workspace, for scripts.

Import-light: grpc and the generated stubs are imported inside command bodies.
The workspace defaults to the current directory.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from clients.cli import exit_codes
from clients.cli.commands.common import cli_errors

app = typer.Typer(name="memory", help="Long-term memory notes: list, search, show, pin, forget.", no_args_is_help=True)

WorkspaceOpt = typer.Option(None, "--workspace", "-w", help="Workspace root (default: the current directory).")
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text.")


def _workspace(path: Path | None) -> str:
    return str((path or Path.cwd()).resolve())


@contextmanager
def _memory(command: str) -> Iterator[Any]:
    """A stub to the running memory service; RPC failures become one line and an exit code."""
    import grpc
    from ai_coding.v1 import memory_pb2_grpc

    from services.kernel.channels import sync_channel
    from services.kernel.config import load_config
    from services.kernel.endpoints import endpoint_for
    from services.kernel.errors import reason_of

    with cli_errors(f"memory {command}"):
        endpoint = endpoint_for("memory", load_config(None))
    channel = sync_channel(endpoint)
    try:
        yield memory_pb2_grpc.MemoryStub(channel)
    except grpc.RpcError as err:
        if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            print(f"ai-coding memory {command}: the memory service is not reachable at {endpoint}; "
                  "start the services with `ai-coding up`.", file=sys.stderr)
            raise typer.Exit(exit_codes.UNAVAILABLE) from None
        reason = reason_of(err)
        print(f"ai-coding memory {command}: {err.details()}" + (f" ({reason})" if reason else ""), file=sys.stderr)
        raise typer.Exit(exit_codes.USAGE) from None
    finally:
        channel.close()


def _note_dict(n: Any) -> dict[str, Any]:
    return {
        "id": n.id, "text": n.text, "kind": n.kind, "importance": n.importance, "pinned": n.pinned,
        "scene": n.scene, "evidence": n.evidence, "scope": n.scope, "source_message_ids": list(n.source_message_ids),
        "hits": n.hits, "last_used": n.last_used, "created": n.created, "updated": n.updated,
    }


def _line(n: Any) -> str:
    flags = ("*" if n.pinned else " ") + str(n.importance)
    scene = f" [{n.scene}]" if n.scene else ""
    return f"  {n.id}  {flags}{scene} {n.text}"


@app.command("list")
def list_notes(
    kind: str = typer.Option("", "--kind", help="Only this kind (fact, decision, preference, ...)."),
    limit: int = typer.Option(0, "--limit", help="At most this many notes (0 = all)."),
    workspace: Path | None = WorkspaceOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Notes grouped by kind, newest first (* = pinned, digit = importance)."""
    from ai_coding.v1 import memory_pb2 as pb

    with _memory("list") as stub:
        notes = stub.ListNotes(pb.ListNotesRequest(workspace=_workspace(workspace), kind=kind, limit=limit), timeout=30).notes
    if as_json:
        print(json.dumps({"notes": [_note_dict(n) for n in notes]}, ensure_ascii=False))
        return
    if not notes:
        print("memory holds no notes for this workspace")
    for group in sorted({n.kind for n in notes}):
        members = [n for n in notes if n.kind == group]
        print(f"{group} ({len(members)})")
        for n in members:
            print(_line(n))
    scenes = Counter(n.scene for n in notes if n.scene)
    if scenes:
        print("scenes: " + ", ".join(f"{s}={c}" for s, c in sorted(scenes.items())))
    evidence = Counter(n.evidence or "none" for n in notes)
    if notes:
        print("evidence: " + " ".join(f"{e}={evidence[e]}" for e in ("tool", "model", "none") if evidence[e]))


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
    from ai_coding.v1 import memory_pb2 as pb

    request = pb.RecallRequest(
        workspace=_workspace(workspace), query=query, k=k, kind=kind, scene=scene, skip_hit_count=True
    )
    with _memory("search") as stub:
        resp = stub.Recall(request, timeout=30)
    if as_json:
        hits = [{"note": _note_dict(h.note), "score": h.score, "relevance": h.relevance,
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
    fields = _note_dict(note)
    if as_json:
        print(json.dumps(fields, ensure_ascii=False))
        return
    for key, value in fields.items():
        print(f"{key:>18}: {value}")


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
