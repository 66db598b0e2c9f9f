"""Pure parts of /resume: grouping, filtering, prefix matching, and the history redraw."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

from clients.cli.session_rows import SessionLike, session_line


@dataclass(frozen=True)
class SessionRow:
    """One saved session as the picker shows it."""

    session_id: str
    last_activity: float
    preview: str
    message_count: int
    open: bool = False


def day_label(ts: float, today: dt.date) -> str:
    """'Today', 'Yesterday' or the ISO date of ``ts`` (local time)."""
    day = dt.datetime.fromtimestamp(ts).date()
    if day == today:
        return "Today"
    if day == today - dt.timedelta(days=1):
        return "Yesterday"
    return day.isoformat()


def group_sessions(rows: list[SessionRow], today: dt.date,
                   exclude: str = "") -> list[tuple[str, list[SessionRow]]]:
    """Newest activity first, grouped by day; sessions open elsewhere (and ``exclude``) left out."""
    shown = sorted((r for r in rows if not r.open and r.session_id != exclude),
                   key=lambda r: r.last_activity, reverse=True)
    groups: list[tuple[str, list[SessionRow]]] = []
    for row in shown:
        label = day_label(row.last_activity, today)
        if not groups or groups[-1][0] != label:
            groups.append((label, []))
        groups[-1][1].append(row)
    return groups


def filter_rows(rows: list[SessionRow], query: str) -> list[SessionRow]:
    """Rows whose preview or id contains ``query`` (case-insensitive)."""
    needle = query.strip().lower()
    return [r for r in rows if needle in r.preview.lower() or needle in r.session_id.lower()]


def match_prefix(rows: list[SessionRow], prefix: str) -> tuple[SessionRow | None, list[SessionRow]]:
    """The one session whose id starts with ``prefix``, or (None, candidates) when none or several do."""
    candidates = [r for r in rows if r.session_id.startswith(prefix.strip())]
    if len(candidates) == 1:
        return candidates[0], candidates
    return None, candidates


def row_line(row: SessionLike) -> str:
    """The picker's line for ``row``: the one every session list shows (clients.cli.session_rows)."""
    return session_line(row)


@dataclass(frozen=True)
class HistoryItem:
    """One line group of a redrawn session: ``kind`` is user, assistant or tool."""

    kind: str
    text: str
    ok: bool = True
    pending: bool = False
    """A tool call with no result saved yet (still running, or its turn was cut off)."""


def history_items(messages_json: str) -> list[HistoryItem]:
    """The saved messages as they are redrawn: user text, model text, one collapsed line per tool call."""
    try:
        messages: list[dict[str, Any]] = json.loads(messages_json or "[]")
    except json.JSONDecodeError:
        return []
    results = {m.get("toolCallId", ""): str(m.get("content") or "") for m in messages if m.get("role") == "tool"}
    items: list[HistoryItem] = []
    for message in messages:
        role, content = message.get("role"), _content_text(message.get("content"))
        if role == "user" and content and _HARNESS_NOTE.match(content):
            items.append(HistoryItem("note", content))  # the loop's own nudge to the model, not the user's
        elif role == "user" and content:
            items.append(HistoryItem("user", content))
        elif role == "assistant":
            if content:
                items.append(HistoryItem("assistant", content))
            for call in message.get("toolCalls") or []:
                call_id = call.get("id", "")
                if call_id not in results:
                    items.append(HistoryItem("tool", _tool_line(call, ""), pending=True))
                    continue
                result = results[call_id]
                items.append(HistoryItem("tool", _tool_line(call, result), ok=_looks_ok(result)))
    return items


def plan_lines(plan_json: str) -> list[tuple[str, str]]:
    """The last /plan run's receipts as (text, style) lines: each step's header, then its receipt line
    (the same lines the run showed live)."""
    from clients.cli import views
    from clients.cli.records import fields_of
    from clients.cli.render import plan_step_header, receipt_line

    try:
        plan = json.loads(plan_json) if plan_json else {}
    except json.JSONDecodeError:
        return []
    receipts = plan.get("receipts") if isinstance(plan, dict) else None
    lines: list[tuple[str, str]] = []
    known = {f.name for f in fields_of(views.PlanStepReceipt)}
    for raw in receipts if isinstance(receipts, list) else []:
        if not isinstance(raw, dict):
            continue
        try:
            receipt = views.PlanStepReceipt(**{k: v for k, v in raw.items() if k in known})
        except TypeError:
            continue
        lines.append((plan_step_header(receipt.index, receipt.total, receipt.content), "bold"))
        lines.append((receipt_line(receipt), "green" if receipt.outcome == "done" else "yellow"))
    return lines


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _tool_line(call: dict[str, Any], result: str) -> str:
    from clients.cli.render import one_line
    from services.kernel.titles import tool_title

    title = tool_title(str(call.get("name", "")), str(call.get("arguments", "")))
    first = one_line(result)
    return f"{title} · {first}" if first else title


# The loop's own messages to the model, written with the user role: its nudges and gates
# (services/loop/policy: turn.py [continue], guards.py [strategy-gate], search.py [search-gate],
# plans/policy.py [acceptance-gate]) and compaction's request and checkpoint.
_HARNESS_NOTE = re.compile(r"^\[(continue|strategy-gate|search-gate|acceptance-gate|compaction-request|checkpoint)\] ")

# The loop writes a failed call's result as "<error_code>: <message>" (denied_by_user: ...,
# edit_no_match: ..., cancelled: ...).
_FAILED_RESULT = re.compile(r"^(?:[a-z]+(?:_[a-z]+)+|cancelled|timeout): ")


def _looks_ok(result: str) -> bool:
    if _FAILED_RESULT.match(result):
        return False
    tail = result.rstrip().rsplit("\n", 1)[-1]
    if tail.startswith("(exit code ") and tail != "(exit code 0)":  # a command that exited non-zero
        return False
    head = result.lstrip()[:200].lower()
    if head.startswith("{"):
        try:
            data = json.loads(result)
        except json.JSONDecodeError:
            return True
        return not (isinstance(data, dict) and (data.get("ok") is False or data.get("error")))
    return not head.startswith(("error", "[error"))


@dataclass(frozen=True)
class Pick:
    """What a line typed at the /resume picker does."""

    resume_id: str = ""
    """Resume this session (the picker closes)."""
    rows: list[SessionRow] | None = None
    """Still choosing among these (re-listed); None closes the picker."""
    message: str = ""
    """A line to print first (empty: none)."""


def pick(rows: list[SessionRow], line: str) -> Pick:
    """A number picks that row; an id prefix or words that leave one row pick it; Enter alone cancels."""
    text = line.strip()
    if not text:
        return Pick(message="resume cancelled")
    if text.isdigit() and 1 <= int(text) <= len(rows):
        return Pick(resume_id=rows[int(text) - 1].session_id)
    match, _ = match_prefix(rows, text)
    filtered = [match] if match else filter_rows(rows, text)
    if len(filtered) == 1:
        return Pick(resume_id=filtered[0].session_id)
    if not filtered:
        return Pick(rows=rows, message=f"nothing matches {text!r}; Enter alone cancels")
    return Pick(rows=filtered)


def group_lines(groups: list[tuple[str, list[SessionRow]]]) -> list[tuple[str, str]]:
    """The picker listing as (text, style) lines: a bold day label, then numbered rows."""
    lines: list[tuple[str, str]] = []
    number = 0
    for label, group in groups:
        lines.append((label, "bold"))
        for row in group:
            number += 1
            lines.append((f"  {number:>2}. {row_line(row)}", ""))
    return lines


def history_lines(items: list[HistoryItem], plan: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """A redrawn session as (text, style) lines: user text, model text, one ✓/✗ line per tool call;
    ``plan`` (the last /plan run's step headers and receipts) follows that run's ``/plan`` line."""
    last_plan = max((n for n, i in enumerate(items) if i.kind == "user" and i.text.startswith("/plan ")),
                    default=-1)
    lines = [(f"── history ({len(items)} items) ──", "dim")]
    for n, item in enumerate(items):
        if item.kind == "user":
            lines.append((f"› {item.text}", "bold"))
            if n == last_plan:
                lines += plan or []
        elif item.kind == "assistant":
            lines.append((item.text, ""))
        elif item.kind == "note":
            lines.append((f"  {_first_line(item.text)}", "dim"))
        elif item.pending:
            lines.append((f"▸ {item.text} · no result yet", "yellow"))
        else:
            lines.append((f"✓ {item.text}", "green") if item.ok else (f"✗ {item.text}", "red"))
    lines.append(("── end of history ──", "dim"))
    return lines


def _first_line(text: str) -> str:
    from clients.cli.render import one_line

    return one_line(text, 120)
