"""The diffs of a turn's writes and edits: read from the tool-finished data, drawn as git colours them.

The tools service already puts a unified diff in an edit's (and a replacing write's) result data
(``{"path", "diff", ...}``); a created file has none, so its diff is its content as added lines.
Nothing here talks to a service: :func:`edit_diff` reads one finished call, :class:`DiffLog`
keeps the turn's and the session's, :func:`diff_text` draws one (folded past a height).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum

from rich.text import Text

from clients.cli.textsafe import visible_controls

# How many diff lines show inline under a write/edit line; the rest folds into "/diff shows all".
# 12 lines keep a one-hunk edit whole (3 context + a few changed + 3 context) on a 40-row screen.
FOLD_LINES = 12
DIFF_TOOLS = frozenset({"write", "edit"})


class Scope(Enum):
    """Which changes ``/diff`` shows."""

    TURN = "turn"
    SESSION = "session"


@dataclass(frozen=True)
class FileDiff:
    """One write or edit's change to ``path`` as a unified diff (``created``: the file is new)."""

    path: str
    diff: str
    created: bool = False

    @property
    def added(self) -> int:
        """Lines added."""
        return sum(1 for line in self.diff.splitlines() if line.startswith("+") and not line.startswith("+++"))

    @property
    def removed(self) -> int:
        """Lines removed."""
        return sum(1 for line in self.diff.splitlines() if line.startswith("-") and not line.startswith("---"))


def created_diff(path: str, content: str) -> str:
    """A new file's unified diff: every line of ``content`` added."""
    lines = content.splitlines()
    if not lines:
        return ""
    body = "".join(f"+{line}\n" for line in lines)
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def edit_diff(tool: str, arguments_json: str, ok: bool, data_json: str) -> FileDiff | None:
    """The change a finished write/edit made, or ``None`` (another tool, a failure, a dry run, no change)."""
    if tool not in DIFF_TOOLS or not ok:
        return None
    data = _object(data_json)
    path = data.get("path")
    if not isinstance(path, str) or data.get("dry_run"):
        return None
    diff = data.get("diff")
    if isinstance(diff, str) and diff:
        return FileDiff(path, diff)
    if tool == "write" and data.get("created") is True:
        content = _object(arguments_json).get("content")
        if isinstance(content, str) and content:
            return FileDiff(path, created_diff(path, content), created=True)
    return None


_CREATED = re.compile(r"^Created (.+) \(\d+ lines?\)\.$")
_CHANGED = ("Edited ", "Replaced ")


def recorded_change(tool: str, arguments_json: str, result: str) -> FileDiff | None:
    """The change a write/edit made as its saved result reads (the model's copy of the tool's output:
    'Edited PATH: ...' or 'Replaced PATH ...' then the diff, or 'Created PATH (N lines).'); ``None``
    for a failure, a dry run, another tool, or a result compaction has rewritten."""
    if tool not in DIFF_TOOLS:
        return None
    first, _, rest = result.partition("\n")
    if first.startswith(_CHANGED) and rest.startswith("--- "):
        header = next((line for line in rest.split("\n", 2)[:2] if line.startswith("+++ b/")), "")
        return FileDiff(header[len("+++ b/"):], rest) if header else None
    created = _CREATED.match(first)
    if tool == "write" and created:
        content = _object(arguments_json).get("content")
        if isinstance(content, str) and content:
            return FileDiff(created.group(1), created_diff(created.group(1), content), created=True)
    return None


def recorded_changes(messages_json: str) -> list[FileDiff]:
    """A saved session's writes and edits in order, from its record (the loop's GetSession): what
    ``/diff session`` shows after ``/resume``."""
    try:
        messages = json.loads(messages_json or "[]")
    except ValueError:
        return []
    if not isinstance(messages, list):
        return []
    messages = [m for m in messages if isinstance(m, dict)]
    results = {str(m.get("toolCallId", "")): str(m.get("content") or "") for m in messages if m.get("role") == "tool"}
    changes = []
    calls = [call for m in messages if m.get("role") == "assistant" for call in m.get("toolCalls") or []]
    for call in calls:
        if not isinstance(call, dict) or str(call.get("id", "")) not in results:
            continue
        change = recorded_change(str(call.get("name", "")), str(call.get("arguments", "")),
                                 results[str(call.get("id", ""))])
        if change is not None:
            changes.append(change)
    return changes


def _object(text: str) -> dict[str, object]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def line_style(line: str) -> str:
    """git's diff colours: headers bold, hunks cyan, additions green, removals red, context plain."""
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("@@"):
        return "cyan"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("[... diff cut"):
        return "dim"
    return ""


def _shown_lines(diff: str, fold: int | None) -> list[str]:
    lines = diff.rstrip("\n").split("\n")
    if fold is not None:
        lines = [line for line in lines if not line.startswith(("+++", "---"))]
    return lines


def folds(diff: str, fold: int = FOLD_LINES) -> bool:
    """Whether :func:`diff_text` folds ``diff`` (it has more than ``fold`` lines to show inline)."""
    return len(_shown_lines(diff, fold)) > fold


SHOWN_ALL = "/diff shows all"
RUN_HINT = "`ai-coding -c` then /diff session shows all"
"""``run`` has no /diff: the REPL continuing its session has (read back from the saved session)."""


def fold_hint(unfold_key: str = "") -> str:
    """What the REPL's folded line says shows the rest: the key that unfolds it, and /diff."""
    return f"{unfold_key} unfolds · {SHOWN_ALL}" if unfold_key else SHOWN_ALL


def diff_text(diff: str, fold: int | None = FOLD_LINES, indent: str = "    ", hint: str = SHOWN_ALL) -> Text:
    """``diff`` as styled text (styles drop away without a terminal), its file headers left out when
    folded; past ``fold`` lines the rest is one dim "… N more lines (HINT)" line."""

    lines = _shown_lines(diff, fold)
    hidden = 0
    if fold is not None and len(lines) > fold:
        hidden = len(lines) - fold
        lines = lines[:fold]
    text = Text()
    for n, line in enumerate(lines):
        if n:
            text.append("\n")
        text.append(indent + visible_controls(line), style=line_style(line))
    if hidden:
        text.append(f"\n{indent}… {hidden} more line{'s' if hidden != 1 else ''} ({hint})", style="dim")
    return text


@dataclass
class DiffLog:
    """The diffs of the current turn and of the whole session (as this client saw them)."""

    turn: list[FileDiff] = field(default_factory=list)
    session: list[FileDiff] = field(default_factory=list)
    folded: FileDiff | None = None
    """The last diff drawn folded and not unfolded since (what the REPL's unfold key shows)."""

    def start_turn(self) -> None:
        """A new turn: its own list starts empty, the session's keeps growing."""
        self.turn = []

    def add(self, change: FileDiff) -> None:
        """Record one write/edit (the last folded one when it is drawn folded)."""
        self.turn.append(change)
        self.session.append(change)
        if folds(change.diff):
            self.folded = change

    def unfold(self) -> FileDiff | None:
        """The last folded diff, to show whole once (``None``: none folded since the last unfold)."""
        change, self.folded = self.folded, None
        return change

    def changes(self, scope: Scope) -> list[FileDiff]:
        """The changes of ``scope``, in the order they were made."""
        return list(self.turn if scope is Scope.TURN else self.session)


def parse_scope(args: str) -> Scope | None:
    """``/diff`` -> the turn, ``/diff session`` (or ``all``) -> the session; anything else ``None``."""
    word = args.strip().lower()
    if word in ("", "turn", "last"):
        return Scope.TURN
    if word in ("session", "all"):
        return Scope.SESSION
    return None


def combined(changes: list[FileDiff]) -> str:
    """The changes as one diff: grouped by file (first-touched first), each file's hunks in order."""
    by_path: dict[str, list[FileDiff]] = {}
    for change in changes:
        by_path.setdefault(change.path, []).append(change)
    parts = []
    for path_changes in by_path.values():
        first = True
        for change in path_changes:
            lines = change.diff.rstrip("\n").split("\n")
            if not first:  # one header per file: later edits of it add only their hunks
                lines = [line for line in lines if not line.startswith(("+++", "---"))]
            first = False
            parts.extend(lines)
    return "\n".join(parts) + ("\n" if parts else "")


def summary(changes: list[FileDiff]) -> str:
    """'2 files changed, +9 -1' (what /diff prints above the diff)."""
    files = len({c.path for c in changes})
    added = sum(c.added for c in changes)
    removed = sum(c.removed for c in changes)
    return f"{files} file{'s' if files != 1 else ''} changed, +{added} -{removed}"


def diff_command(log: DiffLog, args: str) -> Text:
    """What ``/diff [session]`` prints: the summary and the combined diff, unfolded."""
    scope = parse_scope(args)
    if scope is None:
        return Text(f"/diff takes nothing (this turn) or `session`, not {args.strip()!r}", style="yellow")
    changes = log.changes(scope)
    if not changes:
        where = "this turn" if scope is Scope.TURN else "this session"
        return Text(f"no file changes in {where} yet (/diff session shows the whole session's)"
                    if scope is Scope.TURN else f"no file changes in {where} yet", style="dim")
    text = Text(summary(changes) + (" this turn" if scope is Scope.TURN else " this session") + "\n", style="bold")
    text.append_text(diff_text(combined(changes), fold=None, indent=""))
    return text
