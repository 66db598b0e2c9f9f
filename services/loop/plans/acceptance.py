"""Acceptance items: a checkable statement and the shell command that proves it.

A session keeps its items (saved with it, only when there are any). They come from
the user (``/accept "tests pass" -- pytest -q``), from the user config
(``plans.acceptance``, an execution key: a project file cannot add commands that the
gate would run), from a plan step's ``verify``, and from the model through
``acceptance_propose`` (a WARN tool: under confirm mode the user approves the command
before it becomes an item).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from services.loop.core.acceptance import AcceptanceItem
from services.loop.core.errors import LoopError
from services.loop.core.feature import StateSlot
from services.loop.core.ports import ToolCall, ToolContext, ToolDef, ToolOutcome
from services.loop.core.turn_events import Notice
from services.loop.policy.permissions import Level

MAX_ITEMS = 20
MAX_STATEMENT_CHARS = 300
MAX_COMMAND_CHARS = 2000


class AcceptanceError(LoopError, ValueError):
    """An item or an /accept line that cannot be used; the text says what to send instead."""

    reason = "acceptance_invalid"


def make_item(item_id: str, statement: str, command: str, source: str) -> AcceptanceItem:
    """A checked new item (raises AcceptanceError with what to fix)."""
    statement, command = " ".join(statement.split()), command.strip()
    if not command:
        raise AcceptanceError("the proof command is empty; give a shell command whose exit code 0 proves "
                              "the statement, e.g. `pytest -q`")
    if len(command) > MAX_COMMAND_CHARS:
        raise AcceptanceError(f"the proof command is longer than {MAX_COMMAND_CHARS} characters; put it in a "
                              "script in the workspace and run that")
    return AcceptanceItem(item_id, (statement or command)[:MAX_STATEMENT_CHARS], command, source)


def parse_accept(args: str) -> tuple[str, str]:
    """``"statement" -- command`` -> (statement, command). The statement may be unquoted words."""
    head, sep, command = args.partition(" -- ")
    if not sep:
        if args.strip().startswith("-- "):
            head, command = "", args.strip()[3:]
        else:
            raise AcceptanceError('write /accept "what must hold" -- <shell command that proves it>, '
                                  'e.g. /accept "tests pass" -- pytest -q')
    try:
        words = shlex.split(head)
    except ValueError as err:
        raise AcceptanceError(f"the statement has an unbalanced quote ({err}); quote it once") from None
    return " ".join(words), command.strip()


class AcceptanceBook:
    """The acceptance items of one session: the user config's for its workspace, then its own
    (``load`` / ``store`` read and write those in the session record)."""

    def __init__(self, load: Callable[[], list[AcceptanceItem]], store: Callable[[list[AcceptanceItem]], None],
                 configured: Iterable[AcceptanceItem] = ()) -> None:
        self._load = load
        self._store = store
        self.configured = list(configured)

    def own(self) -> list[AcceptanceItem]:
        """The items saved with the session."""
        return list(self._load())

    def items(self) -> list[AcceptanceItem]:
        """Every item the gate checks (``ports.AcceptanceSource``)."""
        return [*self.configured, *self.own()]

    def _save(self, items: Iterable[AcceptanceItem]) -> None:
        self._store(list(items))

    def add(self, statement: str, command: str, source: str) -> AcceptanceItem:
        """Add one item (an item with the same command is replaced, keeping its id)."""
        items = self.own()
        same = next((i for i in items if i.command == command.strip()), None)
        if same is None and len(items) >= MAX_ITEMS:
            raise AcceptanceError(f"the session already has {MAX_ITEMS} acceptance items; drop some first "
                                  "(/accept drop <id>)")
        numbers = [int(i.id[1:]) for i in items if i.id[1:].isdigit()]
        item = make_item(same.id if same else f"a{max(numbers, default=0) + 1}", statement, command, source)
        self._save([item if i is same else i for i in items] if same else [*items, item])
        return item

    def drop(self, item_id: str) -> bool:
        items = self.own()
        kept = [i for i in items if i.id != item_id]
        self._save(kept)
        return len(kept) != len(items)

    def clear(self) -> None:
        self._save([])

    def record(self, verdicts: Mapping[str, bool]) -> None:
        """Keep each checked item's last verdict."""
        items = self.own()
        for item in [*items, *self.configured]:
            if item.id in verdicts:
                item.last_passed = verdicts[item.id]
        self._save(items)


def _decode_items(raw: Any) -> list[AcceptanceItem]:
    return [item for entry in raw if (item := AcceptanceItem.from_json(entry)) is not None] if isinstance(
        raw, list) else []


ACCEPTANCE = StateSlot[list[AcceptanceItem]](
    "acceptance", decode=_decode_items, encode=lambda items: [i.to_json() for i in items] or None)
"""The session's own acceptance items (saved only when there are any)."""


def config_items(entries: Any, workspace: str) -> list[AcceptanceItem]:
    """The user config's ``plans.acceptance`` entries for ``workspace`` (``workspace`` omitted: every one)."""
    out: list[AcceptanceItem] = []
    if not isinstance(entries, list):
        return out
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, Mapping):
            continue
        where = str(entry.get("workspace") or "").rstrip("/")
        if where and where != workspace.rstrip("/"):
            continue
        try:
            out.append(make_item(f"c{n}", str(entry.get("statement") or ""), str(entry.get("command") or ""),
                                 "config"))
        except AcceptanceError:
            continue
    return out


def render_items(items: list[AcceptanceItem]) -> str:
    """One line per item for /accept."""
    if not items:
        return ('no acceptance items; add one with /accept "what must hold" -- <proof command>')
    marks = {True: "✓", False: "✗", None: "·"}
    return "\n".join(f"{marks[i.last_passed]} {i.id} [{i.source}] {i.statement} -- {i.command}" for i in items)


PROPOSE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "acceptance_propose",
        "description": (
            "Propose an acceptance item: a statement that must hold when you finish and a shell command proving "
            "it (exit 0), e.g. the tests. It runs in the sandbox whenever you stop; a failure comes back to you."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "statement": {"type": "string", "description": "What must hold, in one sentence."},
                "command": {"type": "string", "description": "Shell command run in the workspace; exit 0 proves it."},
            },
            "required": ["statement", "command"],
        },
    },
}


class ProposeTool:
    """``acceptance_propose`` on one session's book."""

    def __init__(self, book: AcceptanceBook) -> None:
        self.book = book

    def tool_def(self) -> ToolDef:
        # WARN: the gate asks under confirm mode, with the command in the approval's preview.
        # Deferred: most turns never propose an item, and its schema would ride in every request
        # (tool_search finds it; calling it by name loads it).
        return ToolDef.from_spec(PROPOSE_TOOL, permission=Level.WARN, deferred=True, handler=self._handle)

    async def _handle(self, ctx: ToolContext, call: ToolCall, arguments: dict[str, Any]) -> ToolOutcome:
        try:
            item = self.book.add(str(arguments.get("statement") or ""), str(arguments.get("command") or ""),
                                 "model")
        except AcceptanceError as err:
            raise ValueError(str(err)) from None
        ctx.emit(Notice(level="info", text=f"acceptance item {item.id} proposed by the model: {item.statement} "
                                           f"-- {item.command}"))
        return ToolOutcome(call.id, call.name, True,
                           f"acceptance item {item.id} added: {item.statement} (proof: {item.command}). It is "
                           "checked when you stop.", data={"id": item.id})
