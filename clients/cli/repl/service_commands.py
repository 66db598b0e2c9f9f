"""``/memory`` and ``/mcp`` in the REPL: parse the arguments, call the service, return lines to print.

The REPL prints what these return (each line rendered literally: note text and server reasons
are external text) and keeps the ``PendingForget`` a ``/memory forget`` returns until the next
line answers it. Service failures raise ``ClientError`` (one line, printed by the REPL).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from clients.cli import services_view as view
from clients.cli.connection.services import McpClient, MemoryClient

# (text, rich style) pairs.
Lines = list[tuple[str, str]]

MEMORY_SUBCOMMANDS = ("list", "search", "show", "pin", "unpin", "forget")
MEMORY_USAGE = "usage: /memory [search <words> | show <id> | pin <id> | unpin <id> | forget <id>]"
MCP_USAGE = "usage: /mcp [retry <name>]"


@dataclass(frozen=True)
class PendingForget:
    """A ``/memory forget`` waiting for y/N."""

    note_id: str
    text: str


@dataclass
class Output:
    """What a command prints, and a confirmation it leaves waiting (if any)."""

    lines: Lines = field(default_factory=list)
    confirm: PendingForget | None = None


def parse_memory_args(args: str) -> tuple[str, str]:
    """``(subcommand, rest)``: nothing is ``list``; words that are not a subcommand are a search."""
    head, _, rest = args.strip().partition(" ")
    if not head:
        return "list", ""
    if head.lower() in MEMORY_SUBCOMMANDS:
        return head.lower(), rest.strip()
    return "search", args.strip()


def style_overview(lines: list[str]) -> Lines:
    """Kind headers bold, note rows plain, the scenes/evidence summary dim."""
    styled: Lines = []
    for line in lines:
        if line.startswith(" "):
            styled.append((line, ""))
        elif line.startswith(("scenes:", "evidence:", "memory holds no notes")):
            styled.append((line, "dim"))
        else:
            styled.append((line, "bold"))
    return styled


def confirm_prompt(pending: PendingForget) -> str:
    """The question ``/memory forget`` asks (Enter alone keeps the note)."""
    return f"forget {pending.note_id}: {pending.text}? [y/N]"


async def memory_command(client: MemoryClient, args: str) -> Output:
    """Run ``/memory [sub] ...`` against the memory service."""
    sub, rest = parse_memory_args(args)
    if sub == "list":
        return Output(style_overview(view.overview_lines(await client.list_notes())))
    if sub == "search":
        if not rest:
            return Output([(MEMORY_USAGE, "yellow")])
        hits = await client.search(rest)
        if not hits:
            return Output([(f"no note matches {rest!r}", "dim")])
        lines: Lines = [(f"search {rest!r}: {len(hits)} found", "bold")]
        lines.extend((view.note_line(hit.note) + f"  ({hit.note.kind})", "") for hit in hits)
        return Output(lines)
    if not rest or " " in rest:
        return Output([(MEMORY_USAGE, "yellow")])
    notes = await client.list_notes()
    match = view.match_note(notes, rest)
    if match.note is None:
        if match.candidates:
            return Output([(f"note id {rest!r} is ambiguous; candidates:", "yellow"),
                           *((view.note_line(n), "") for n in match.candidates)])
        return Output([(f"no note id starts with {rest!r} (see /memory)", "yellow")])
    note_id = match.note.id
    if sub == "show":
        return Output([(line, "") for line in view.field_lines(view.note_fields(await client.get(note_id)))])
    if sub in ("pin", "unpin"):
        note = await client.pin(note_id, pinned=sub == "pin")
        return Output([(f"{sub}ned {note.id}: {note.text}", "")])
    pending = PendingForget(note_id, match.note.text)
    return Output([(confirm_prompt(pending), "yellow")], confirm=pending)


async def confirm_forget(client: MemoryClient, pending: PendingForget, answer: str) -> Output:
    """Answer a waiting ``/memory forget``: only y/yes deletes."""
    if not view.is_yes(answer):
        return Output([(f"kept {pending.note_id}", "dim")])
    deleted = await client.forget(pending.note_id)
    return Output([(f"forgot {pending.note_id}" if deleted else f"{pending.note_id} was already gone", "")])


async def mcp_command(client: McpClient, args: str, note: Callable[[str], None],
                      session_id: str = "") -> tuple[Output, list[str]]:
    """Run ``/mcp [retry NAME]`` for the REPL's session ``session_id`` (its own editor servers are
    listed as its own, other sessions' only counted); also returns the server names it may use (for
    completion)."""
    head, _, rest = args.strip().partition(" ")
    if not head:
        servers = await client.servers()
        lines = view.server_lines(servers, session_id, others=False)
        return (Output([(line, "") for line in lines]),
                [s.name for s in servers if not s.session_id or s.session_id == session_id])
    name = rest.strip()
    if head.lower() != "retry" or not name or " " in name:
        return Output([(MCP_USAGE, "yellow")]), []
    note(f"retrying {name}…")
    status = await client.retry(name)
    if status is None:
        return Output([(f"{name}: no such MCP server any more", "yellow")]), []
    return Output([(view.server_line(status), "")]), []
