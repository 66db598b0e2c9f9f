"""The task list (``TaskState``) and the semantics of the ``todo_write`` tool.

``todo_write`` takes ``{goal?, add?: [...], update?: [...]}`` and applies it
all or nothing. Dependencies form a DAG by construction (spec: todo
dependencies): ``add`` accepts only existing, non-empty, non-self, non-repeated
ids, and ``depends_on`` cannot change after creation, so no cycle can be made;
``cycle`` in a blocker report only explains legacy data. Moving an item to
``in_progress`` or ``completed`` requires every dependency to be terminal
(completed or dropped); ``pending`` / ``blocked`` / ``dropped`` are always
allowed. ``ai.enforce_dependencies: false`` turns all dependency checks off.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from services.kernel.tool_args import arg, schema_of
from services.loop.core.errors import LoopError

Status = Literal["pending", "in_progress", "completed", "blocked", "dropped"]
STATUSES: tuple[str, ...] = get_args(Status)
TERMINAL = frozenset({"completed", "dropped"})
OPEN = frozenset({"pending", "in_progress", "blocked"})
_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "blocked": "[!]", "dropped": "[-]"}
MAX_ITEMS = 100
MAX_CONTENT_CHARS = 500
MAX_VERIFY_CHARS = 2000


@dataclass
class TaskItem:
    """One todo item."""

    id: str
    content: str
    status: str = "pending"
    depends_on: list[str] = field(default_factory=list)
    verify: str = ""
    """A shell command whose exit code 0 proves the item done (a /plan step's acceptance); "" = none."""


@dataclass
class TaskState:
    """The goal and the todo items of a session (saved with it, rendered into each request's tail)."""

    goal: str = ""
    items: list[TaskItem] = field(default_factory=list)

    def get(self, item_id: str) -> TaskItem | None:
        """The item with ``item_id`` or None."""
        return next((i for i in self.items if i.id == item_id), None)

    def open_items(self) -> list[TaskItem]:
        """Items still pending, in progress or blocked."""
        return [i for i in self.items if i.status in OPEN]

    def to_json(self) -> dict[str, Any]:
        """camelCase dict for the session file."""
        return {
            "goal": self.goal,
            "items": [
                {"id": i.id, "content": i.content, "status": i.status, "dependsOn": list(i.depends_on),
                 **({"verify": i.verify} if i.verify else {})}
                for i in self.items
            ],
        }

    @classmethod
    def from_json(cls, raw: Any) -> TaskState:
        """Tolerant reader (camelCase or snake_case; unknown statuses become pending)."""
        if not isinstance(raw, Mapping):
            return cls()
        items = []
        for entry in raw.get("items") or []:
            if not isinstance(entry, Mapping) or not str(entry.get("id", "")).strip():
                continue
            deps = entry.get("dependsOn", entry.get("depends_on")) or []
            status = str(entry.get("status", "pending"))
            items.append(
                TaskItem(
                    id=str(entry["id"]),
                    content=str(entry.get("content", "")),
                    status=status if status in STATUSES else "pending",
                    depends_on=[str(d) for d in deps] if isinstance(deps, list) else [],
                    verify=str(entry.get("verify") or ""),
                )
            )
        return cls(goal=str(raw.get("goal") or ""), items=items)


@dataclass(frozen=True)
class TodoResult:
    """What todo_write returns: ok with the new state, or an error code with data and a way out."""

    ok: bool
    state: TaskState
    output: str
    error_code: str = ""
    data: dict[str, Any] = field(default_factory=dict)


class _Refused(LoopError):
    """A todo_write the task rules refuse (``code`` is the tool error code)."""

    reason = "task_refused"

    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data or {}


def find_cycle(state: TaskState, start: str) -> list[str]:
    """A dependency cycle through ``start`` (ids, first repeated at the end), or []."""
    path: list[str] = []

    def visit(node: str) -> list[str]:
        if node in path:
            return [*path[path.index(node):], node] if node == start else []
        item = state.get(node)
        if item is None:
            return []
        path.append(node)
        for dep in item.depends_on:
            found = visit(dep)
            if found:
                return found
        path.pop()
        return []

    return visit(start)


def blockers(state: TaskState, item: TaskItem) -> dict[str, list[str]]:
    """Dependencies that stop ``item`` from starting: open ones, unknown ids, and a cycle."""
    open_deps = [d for d in item.depends_on if (dep := state.get(d)) is not None and dep.status not in TERMINAL]
    unknown = [d for d in item.depends_on if state.get(d) is None]
    return {"open": open_deps, "unknown": unknown, "cycle": find_cycle(state, item.id)}


def _next_id(state: TaskState) -> str:
    numbers = [int(i.id) for i in state.items if i.id.isdigit()]
    return str(max(numbers, default=0) + 1)


def _add(state: TaskState, entry: Any, enforce: bool) -> None:
    if not isinstance(entry, Mapping):
        raise _Refused("invalid_arguments", "each `add` entry must be an object with `content`.")
    content = " ".join(str(entry.get("content") or "").split())
    if not content:
        raise _Refused("invalid_arguments", "an `add` entry has empty `content`; describe the step.")
    item_id = str(entry.get("id") or "").strip() or _next_id(state)
    if state.get(item_id):
        raise _Refused("duplicate_id", f"an item with id {item_id!r} already exists; omit `id` to get a new one.")
    deps_raw = entry.get("depends_on", entry.get("dependsOn")) or []
    if not isinstance(deps_raw, list):
        raise _Refused("invalid_arguments", "`depends_on` must be a list of item ids.")
    deps = [str(d).strip() for d in deps_raw]
    if enforce:
        if any(not d for d in deps) or len(set(deps)) != len(deps):
            raise _Refused("invalid_dependency", f"item {item_id!r}: `depends_on` has an empty or repeated id.")
        if item_id in deps:
            raise _Refused("self_dependency", f"item {item_id!r} cannot depend on itself.", {"id": item_id})
        unknown = [d for d in deps if state.get(d) is None]
        if unknown:
            raise _Refused(
                "unknown_dependency",
                f"item {item_id!r} depends on {', '.join(unknown)}, which do not exist yet. Add those items "
                "first (earlier in `add`), then this one.",
                {"id": item_id, "unknown": unknown},
            )
    if len(state.items) >= MAX_ITEMS:
        raise _Refused("too_many_items", f"the list already has {MAX_ITEMS} items; drop or finish some first.")
    verify = str(entry.get("verify") or "").strip()
    if len(verify) > MAX_VERIFY_CHARS:
        raise _Refused("invalid_arguments", f"item {item_id!r}: `verify` is longer than {MAX_VERIFY_CHARS} "
                       "characters; put the check in a script in the workspace and run that.")
    state.items.append(TaskItem(item_id, content[:MAX_CONTENT_CHARS], "pending", deps, verify))


def _update(state: TaskState, entry: Any, enforce: bool) -> None:
    if not isinstance(entry, Mapping) or not entry.get("id"):
        raise _Refused("invalid_arguments", "each `update` entry needs the `id` of an existing item.")
    item = state.get(str(entry["id"]))
    if item is None:
        known = ", ".join(i.id for i in state.items) or "none"
        raise _Refused("unknown_item", f"no item with id {entry['id']!r} (known: {known}).")
    status = str(entry.get("status") or item.status)
    if status not in STATUSES:
        raise _Refused("invalid_status", f"status {status!r} is not one of: {', '.join(STATUSES)}.")
    if enforce and status in ("in_progress", "completed"):
        found = blockers(state, item)
        if any(found.values()):
            raise _Refused(
                "blocked_by_dependencies",
                f"item {item.id!r} cannot be {status} yet: dependencies not finished "
                f"(open: {found['open'] or 'none'}, unknown: {found['unknown'] or 'none'}"
                f"{', cycle: ' + ' -> '.join(found['cycle']) if found['cycle'] else ''}). "
                "Complete those items first, mark ones that no longer matter as dropped, "
                "or drop one item of the cycle.",
                {"id": item.id, **found},
            )
    if entry.get("content"):
        item.content = " ".join(str(entry["content"]).split())[:MAX_CONTENT_CHARS]
    item.status = status


def _copy(state: TaskState) -> TaskState:
    return TaskState.from_json(state.to_json())


def todo_write(state: TaskState, args: Mapping[str, Any], *, enforce_dependencies: bool = True) -> TodoResult:
    """Apply one todo_write call; on any error nothing changes and the result says what to do."""
    new = _copy(state)
    try:
        if "goal" in args and args["goal"] is not None:
            new.goal = " ".join(str(args["goal"]).split())
        for key, apply in (("add", _add), ("update", _update)):
            entries = args.get(key) or []
            if not isinstance(entries, list):
                raise _Refused("invalid_arguments", f"`{key}` must be a list.")
            for entry in entries:
                apply(new, entry, enforce_dependencies)
    except _Refused as refused:
        return TodoResult(False, state, f"todo_write refused ({refused.code}): {refused.message}",
                          refused.code, refused.data)
    return TodoResult(True, new, render_items(new) or "(the task list is empty)")


def render_items(state: TaskState) -> str:
    """One line per item: mark, id, content, and its dependencies."""
    lines = []
    for item in state.items:
        after = f" (after {', '.join(item.depends_on)})" if item.depends_on else ""
        verify = f" [verify: {item.verify}]" if item.verify else ""
        lines.append(f"{_MARKS.get(item.status, '[ ]')} {item.id}. {item.content}{after}{verify}")
    return "\n".join(lines)


def render_task_state(state: TaskState) -> str:
    """The ``<task-state>`` tail block, or "" when there is neither goal nor item."""
    if not state.goal and not state.items:
        return ""
    body = [f"goal: {state.goal}"] if state.goal else []
    if state.items:
        done = sum(1 for i in state.items if i.status == "completed")
        body.append(f"progress: {done}/{len(state.items)} completed")
        body.append(render_items(state))
    return "<task-state>\n" + "\n".join(body) + "\n</task-state>"


@dataclass(frozen=True)
class TodoAdd:
    """One item ``todo_write`` adds."""

    content: str = arg()
    id: str | None = None
    depends_on: list[str] | None = arg("Ids to complete (or drop) first.", None)
    verify: str | None = arg("Command whose exit 0 proves it done (run when a /plan step ends).", None)


@dataclass(frozen=True)
class TodoUpdate:
    """One item's change."""

    id: str = arg()
    status: Status | None = None
    content: str | None = None


@dataclass(frozen=True)
class TodoArgs:
    """``todo_write``'s arguments (their schema is what the model is sent)."""

    goal: str | None = arg("The overall goal, one sentence.", None)
    add: list[TodoAdd] | None = None
    update: list[TodoUpdate] | None = None


TODO_DESCRIPTION = ("Keep the task list for multi-step work: `add` items (ids assigned if omitted; depends_on only "
                    "on existing ids), `update` an item's status as you go. One call applies all or nothing.")
TODO_WRITE_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": "todo_write", "description": TODO_DESCRIPTION, "parameters": schema_of(TodoArgs)}}
