"""What the CLI and the REPL show of the memory service and the MCP gateway: pure formatting and requests.

``ai-coding memory ...`` / ``ai-coding mcp ...`` (sync stubs) and the REPL's ``/memory`` / ``/mcp``
(aio stubs) build the same requests and print the same lines from here. Nothing here talks to a
service or imports grpc; notes and server statuses are view models (``clients.cli.views``).
Returned text is external (note text, server
reasons): callers render it literally (``textsafe.literal``).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clients.cli.service_views import Note, ServerStatus
from services.memory.scenes import display_language, scene_label

STATE_NAMES = {1: "connecting", 2: "connected", 3: "reconnecting", 4: "failed", 5: "needs_auth", 6: "disabled"}
# States a retried server passes through before it settles.
TRANSIENT_STATES = ("connecting", "reconnecting")
RPC_TIMEOUT = 30.0
LIST_TIMEOUT = 10.0


def scene_text(scene: str, language: str | None = None) -> str:
    """A stored scene key as the user reads it: its label in ``language`` (default: the locale's)."""
    return scene_label(scene, language or display_language(os.environ))


def note_line(note: Note) -> str:
    """``  <id>  *3 [scene] text``: ``*`` marks a pinned note, the digit is its importance."""
    flags = ("*" if note.pinned else " ") + str(note.importance)
    scene = f" [{scene_text(note.scene)}]" if note.scene else ""
    return f"  {note.id}  {flags}{scene} {note.text}"


def overview_lines(notes: Sequence[Note]) -> list[str]:
    """Notes grouped by kind with counts, then a ``scenes:`` line (when any) and an ``evidence:`` line."""
    if not notes:
        return ["memory holds no notes for this workspace"]
    lines: list[str] = []
    for kind in sorted({n.kind for n in notes}):
        members = [n for n in notes if n.kind == kind]
        lines.append(f"{kind} ({len(members)})")
        lines.extend(note_line(n) for n in members)
    scenes = Counter(n.scene for n in notes if n.scene)
    if scenes:
        lines.append("scenes: " + ", ".join(f"{scene_text(s)}={c}" for s, c in sorted(scenes.items())))
    evidence = Counter(n.evidence or "none" for n in notes)
    lines.append("evidence: " + " ".join(f"{e}={evidence[e]}" for e in ("tool", "model", "none") if evidence[e]))
    return lines


def note_fields(note: Note) -> dict[str, Any]:
    """Every field of a note as plain JSON-able values."""
    return {
        "id": note.id, "text": note.text, "kind": note.kind, "importance": note.importance, "pinned": note.pinned,
        "scene": note.scene, "evidence": note.evidence, "scope": note.scope,
        "source_message_ids": list(note.source_message_ids), "hits": note.hits, "last_used": note.last_used,
        "created": note.created, "updated": note.updated,
    }


def field_lines(fields: dict[str, Any]) -> list[str]:
    """``/memory show``: one ``key: value`` line per field (a scene's label beside its stored key)."""
    def shown(key: str, value: Any) -> Any:
        label = scene_text(value) if key == "scene" and value else value
        return value if label == value else f"{label} ({value})"

    return [f"{key:>18}: {shown(key, value)}" for key, value in fields.items()]


@dataclass(frozen=True)
class IdMatch:
    """The note an id prefix names (``note``), or the candidates when it names several (or none)."""

    note: Note | None
    candidates: list[Note]


def match_note(notes: Sequence[Note], prefix: str) -> IdMatch:
    """The note whose id is ``prefix`` or starts with it; an exact id always wins over longer ones."""
    prefix = prefix.strip()
    if not prefix:
        return IdMatch(None, [])
    exact = [n for n in notes if n.id == prefix]
    found = exact or [n for n in notes if n.id.startswith(prefix)]
    if len(found) == 1:
        return IdMatch(found[0], [])
    return IdMatch(None, list(found))


def is_yes(answer: str) -> bool:
    """A confirmation answer: only ``y``/``yes`` (any case) agrees; Enter alone or anything else is no."""
    return answer.strip().lower() in ("y", "yes")


# ---- MCP ----

def state_name(status: ServerStatus) -> str:
    """The server's state as a word (``connected``, ``needs_auth``, ...)."""
    return STATE_NAMES.get(int(status.state), "unknown")


def retry_settled(before: ServerStatus, now: ServerStatus) -> bool:
    """Whether a retried server is done: a new attempt began since ``before`` and it is no longer transient.

    (A disabled server, or one waiting for a login, makes no attempt: its state is the answer at once.)
    """
    state = state_name(now)
    if state in ("disabled", "needs_auth"):
        return True
    return now.attempts > before.attempts and state not in TRANSIENT_STATES


def server_line(status: ServerStatus) -> str:
    """One server: name, type, state, tool count, then the reason and what to do about it."""
    state = state_name(status)
    extra = f"  {status.reason}" if status.reason else ""
    if state == "failed" and status.next_retry_in_s:
        extra += f" (retry in {status.next_retry_in_s:.0f}s)"
    if state == "needs_auth":
        extra += f"  (run `ai-coding mcp login {status.name}`)"
    return f"  {status.name:<16} {status.type:<7} {state:<13} {status.tool_count:>3} tools{extra}"


def server_lines(servers: Sequence[ServerStatus], session_id: str = "", others: bool = True) -> list[str]:
    """``/mcp`` and ``ai-coding mcp status``: one line per server, or how to add one; under each,
    the log lines it carries (``mcp status --logs``). The user's own servers come first; a server an
    editor brought for one session (``ai-coding acp``) is listed under that session: ``session_id``'s
    as this session's, the others' under theirs (``others=False``: only counted)."""
    if not servers:
        return ["no MCP servers configured (add one with `ai-coding mcp add`)"]

    def block(group: Sequence[ServerStatus]) -> list[str]:
        out: list[str] = []
        for status in group:
            out.append(server_line(status))
            out.extend(f"      {line.level:<8} {line.logger + ': ' if line.logger else ''}{line.text}"
                       for line in status.log)
        return out

    users = [s for s in servers if not s.session_id]
    lines = block(users) if users else ["no MCP servers of your own (add one with `ai-coding mcp add`)"]
    mine = [s for s in servers if s.session_id and s.session_id == session_id]
    if mine:
        lines += ["this session's editor servers (from ai-coding acp, for this session alone):", *block(mine)]
    sessions: dict[str, list[ServerStatus]] = {}
    for status in servers:
        if status.session_id and status.session_id != session_id:
            sessions.setdefault(status.session_id, []).append(status)
    if sessions and not others:
        count = sum(map(len, sessions.values()))
        lines.append(f"({count} editor server{'s' if count != 1 else ''} of other sessions: "
                     "`ai-coding mcp status` lists them)")
    for other, group in sessions.items() if others else ():
        lines += [f"session {other}'s editor servers (from ai-coding acp, for that session alone):", *block(group)]
    return lines
