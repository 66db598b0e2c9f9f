"""``/rewind`` with no argument: pick a turn of the session with the arrow keys and Enter, then what
to take back (code and conversation, the conversation only, the code only), as Claude Code's double
Esc does. Picking turn N goes back to just before it (the end of turn N-1); when the conversation
goes back, N's prompt returns to the input line, to edit and send again.

The list is the loop's ``/checkpoints`` answer (its JSON ``turns``); the rewind is the loop's
``/rewind N-1 --code|--conversation|--both``, so the picker decides nothing the command would not.
Each list is a small prompt_toolkit application run inside ``in_terminal`` (the REPL's prompt is
suspended meanwhile and redrawn after)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application, get_app_or_none, in_terminal
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.input import create_input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

from clients.cli.connection.loop import LoopClient
from clients.cli.render import EventRenderer
from clients.cli.textsafe import literal, visible_controls

HINT = "↑/↓ to move · Enter to pick · Esc to cancel"
FILES_SHOWN = 3


@dataclass(frozen=True)
class TurnRow:
    """One turn as the picker lists it."""

    turn: int
    at: float
    prompt: str
    undone: bool = False
    steps: int = 0
    conversation: bool = True
    """Its end state was recorded (its successor's conversation can go back to it)."""
    files: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Choice:
    label: str
    flag: str
    conversation: bool


BOTH = Choice("Code and conversation", "--both", True)
CONVERSATION = Choice("Conversation only (the files stay as they are)", "--conversation", True)
CODE = Choice("Code only (the conversation stays as it is)", "--code", False)


class PickerHost(Protocol):
    """What the picker uses of the REPL."""

    client: LoopClient
    session_id: str
    turn_running: bool
    renderer: EventRenderer
    prompt: PromptSession[str]


def opens(name: str, args: str) -> bool:
    """Whether a slash command is the picker's (a bare ``/rewind``)."""
    return name == "rewind" and not args.strip()


def rows_of(data_json: str) -> list[TurnRow]:
    """The turns of a ``/checkpoints`` answer, oldest first (malformed entries are left out)."""
    try:
        data = json.loads(data_json or "{}")
    except ValueError:
        return []
    turns = data.get("turns") if isinstance(data, dict) else None
    rows: list[TurnRow] = []
    for raw in turns if isinstance(turns, list) else []:
        if isinstance(raw, dict) and isinstance(raw.get("turn"), int):
            files = [f for f in raw.get("files") or [] if isinstance(f, dict)]
            rows.append(TurnRow(raw["turn"], float(raw.get("at") or 0), str(raw.get("prompt", "")),
                                bool(raw.get("undone")), int(raw.get("steps") or 0),
                                bool(raw.get("conversation", True)), files))
    return sorted(rows, key=lambda r: r.turn)


def files_text(files: list[dict[str, Any]]) -> str:
    if not files:
        return "no files changed"
    shown = []
    for f in files[:FILES_SHOWN]:
        counts = "" if f.get("binary") else f" +{f.get('added', 0)} -{f.get('removed', 0)}"
        shown.append(f"{f.get('path', '?')}{counts}")
    more = f" and {len(files) - FILES_SHOWN} more" if len(files) > FILES_SHOWN else ""
    return f"{len(files)} file{'s' if len(files) != 1 else ''}: {', '.join(shown)}{more}"


def row_text(row: TurnRow) -> str:
    """``turn 3 · 14:02:11 · the prompt's first line · 2 files: a.py +3 -1, b.bin``."""
    first = visible_controls(row.prompt.strip().splitlines()[0] if row.prompt.strip() else "(no prompt)")
    first = first if len(first) <= 60 else first[:59] + "…"
    undone = " (undone)" if row.undone else ""
    return f"turn {row.turn}{undone} · {time.strftime('%H:%M:%S', time.localtime(row.at))} · {first} · " \
           f"{files_text(row.files)}"


def choices_for(rows: list[TurnRow], index: int) -> list[Choice]:
    """What going back to before ``rows[index]`` can take back: the code when a step from that turn
    on changed files, the conversation when the turn before it was recorded (or it is the first)."""
    code = any(r.steps for r in rows[index:])
    conversation = index == 0 or rows[index - 1].conversation
    if code and conversation:
        return [BOTH, CONVERSATION, CODE]
    return [CONVERSATION] if conversation else [CODE] if code else []


def rewind_args(row: TurnRow, choice: Choice) -> str:
    """The ``/rewind`` arguments that go back to just before ``row``."""
    return f"{row.turn - 1} {choice.flag}"


async def choose(title: str, options: list[str], start: int) -> int | None:
    """An inline list under ``title``: ↑/↓ move, Enter picks, Esc or Ctrl-C cancels (None)."""
    cursor = [max(0, min(start, len(options) - 1))]

    def text() -> FormattedText:
        lines: list[tuple[str, str]] = [("bold", f"{title}\n")]
        for i, option in enumerate(options):
            lines.append(("reverse", f" ❯ {option} ") if i == cursor[0] else ("", f"   {option}"))
            lines.append(("", "\n"))
        lines.append(("fg:ansibrightblack", HINT))
        return FormattedText(lines)

    kb = KeyBindings()

    @kb.add("up")
    def _up(event: KeyPressEvent) -> None:
        cursor[0] = max(0, cursor[0] - 1)

    @kb.add("down")
    def _down(event: KeyPressEvent) -> None:
        cursor[0] = min(len(options) - 1, cursor[0] + 1)

    @kb.add("enter")
    def _pick(event: KeyPressEvent) -> None:
        event.app.exit(result=cursor[0])

    @kb.add("escape", eager=True)
    @kb.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    outer = get_app_or_none()  # the REPL's prompt: the list writes to its terminal
    app: Application[int | None] = Application(
        layout=Layout(Window(FormattedTextControl(text, show_cursor=False), wrap_lines=False)),
        key_bindings=kb, full_screen=False, erase_when_done=True,
        # An input of its own: sharing the prompt's, a lone Esc held for its timeout can be flushed
        # into the suspended prompt instead (seen in tmux: the first Esc after an arrow was lost).
        input=create_input(), output=outer.output if outer is not None else None)
    async with in_terminal():
        return await app.run_async()


async def run(host: PickerHost) -> None:
    """The bare ``/rewind``: list, pick a turn, pick what, rewind, print what the loop did."""
    say = host.renderer.print
    if host.turn_running:
        say(literal("a turn is running: /rewind when it has ended (or press Esc to interrupt it)", "yellow"))
        return
    listing = await host.client.run_command(host.session_id, "checkpoints", "")
    rows = rows_of(listing.data_json)
    if not rows:
        say(literal(listing.text.rstrip() or "nothing to rewind yet", "dim"))
        return
    picked = await choose("Rewind to just before which turn?", [row_text(r) for r in rows], len(rows) - 1)
    if picked is None:
        say(literal("  rewind cancelled", "dim"))
        return
    row, choices = rows[picked], choices_for(rows, picked)
    if not choices:
        say(literal(f"  nothing to take back from turn {row.turn} on", "dim"))
        return
    which = await choose(f"Rewind to just before turn {row.turn}: what?", [c.label for c in choices], 0)
    if which is None:
        say(literal("  rewind cancelled", "dim"))
        return
    choice = choices[which]
    say(literal(f"› /rewind {rewind_args(row, choice)}", "bold"))
    reply = await host.client.run_command(host.session_id, "rewind", rewind_args(row, choice))
    failed = _failed(reply.data_json)
    say(literal(reply.text.rstrip() or "rewound", "yellow" if failed else ""))
    if choice.conversation and not failed and row.prompt:
        host.prompt.default_buffer.set_document(Document(row.prompt), bypass_readonly=True)


def _failed(data_json: str) -> bool:
    try:
        data = json.loads(data_json or "{}")
    except ValueError:
        return True
    return not isinstance(data, dict) or "error" in data
