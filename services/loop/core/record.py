"""A session's record: its messages and loop state (``Session``), the list views of saved sessions,
and the message shape (Chat Completions in memory, camelCase on disk). sessions.py keeps them on disk."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from services.loop.core.tasks import TaskState

Message = dict[str, Any]


@dataclass(frozen=True)
class SessionSummary:
    """What a session list shows, without the messages."""

    id: str
    created: float
    updated: float
    preview: str
    message_count: int


@dataclass(frozen=True)
class UnreadableSession:
    """A saved session whose files cannot be read: the file, why, and what to do."""

    id: str
    path: str
    reason: str
    hint: str


@dataclass
class Session:
    """One conversation: its messages (Chat Completions dicts) and loop state."""

    id: str
    workspace: str
    model: str = ""
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    messages: list[Message] = field(default_factory=list)
    task_state: TaskState = field(default_factory=TaskState)
    """The todo list (todo_write's and a plan's); readers that change it take a copy and assign it back."""
    last_seq: int = 0
    turns: int = 0
    allowed_tools: list[str] = field(default_factory=list)
    permission_mode: str = ""
    """What /permissions last set ("auto" or "confirm"), kept across loop restarts; "" = never set
    (the opening client's --auto-approve decides)."""
    usage: dict[str, Any] = field(default_factory=dict)
    harvest_cursor: int = 0
    """Messages before this index were already offered to the memory harvest."""
    open_turn: dict[str, Any] = field(default_factory=dict)
    """The turn under way at the last save (``crash_marks``); empty once it finished."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Other features' persisted state by meta key, as raw JSON (each feature's ``StateSlot``
    decodes its own; a key no feature reads is kept as it was)."""

    def add_usage(self, prompt_tokens: int, completion_tokens: int, total_tokens: int,
                  cached_tokens: int | None = None, cost_usd: float | None = None) -> None:
        """Add one model step's tokens to the session's totals (kept in the on-disk shape); the
        cache figure and the cost only when known (``cachedTokens`` counts the prompt tokens of
        the steps that reported one, ``costUsd`` the steps that had a price)."""
        for key, value in (("promptTokens", prompt_tokens), ("completionTokens", completion_tokens),
                           ("totalTokens", total_tokens)):
            self.usage[key] = int(self.usage.get(key, 0)) + value
        if cached_tokens is not None:
            self.usage["cachedTokens"] = int(self.usage.get("cachedTokens", 0)) + cached_tokens
            self.usage["cacheReportedPromptTokens"] = int(self.usage.get("cacheReportedPromptTokens", 0)) + prompt_tokens
        if cost_usd is not None:
            self.usage["costUsd"] = float(self.usage.get("costUsd", 0.0)) + cost_usd

    def preview(self) -> str:
        """The first user message as typed, at most 80 characters (see :func:`preview_text`)."""
        for message in self.messages:
            if message.get("role") == "user":
                return preview_text(message.get("content"))
        return ""

    def summary(self) -> SessionSummary:
        """The list view of this session."""
        return SessionSummary(self.id, self.created, self.updated, self.preview(), len(self.messages))

    def meta(self) -> dict[str, Any]:
        """Everything but the messages, in the on-disk (camelCase) shape."""
        return {
            "id": self.id,
            "workspace": self.workspace,
            "model": self.model,
            "createdAt": self.created,
            "updatedAt": self.updated,
            "taskState": self.task_state.to_json() if self.task_state.goal or self.task_state.items else {},
            "lastSeq": self.last_seq,
            "turns": self.turns,
            "allowedTools": self.allowed_tools,
            "usage": self.usage,
            "harvestCursor": self.harvest_cursor,
            **{key: value for key, value in self.slots.items() if key not in _OWN_KEYS},
            **({"openTurn": self.open_turn} if self.open_turn else {}),
            **({"permissionMode": self.permission_mode} if self.permission_mode else {}),
        }

    def apply_meta(self, meta: dict[str, Any]) -> None:
        """Take loop state from an on-disk meta object (missing keys keep their value)."""
        self.model = str(meta.get("model", self.model))
        self.created = float(meta.get("createdAt", self.created))
        self.updated = float(meta.get("updatedAt", self.updated))
        if meta.get("taskState"):
            self.task_state = TaskState.from_json(meta["taskState"])
        self.last_seq = int(meta.get("lastSeq", self.last_seq))
        self.turns = int(meta.get("turns", self.turns))
        self.allowed_tools = list(meta.get("allowedTools") or self.allowed_tools)
        self.usage = dict(meta.get("usage") or self.usage)
        self.harvest_cursor = int(meta.get("harvestCursor", self.harvest_cursor))
        self.open_turn = meta["openTurn"] if isinstance(meta.get("openTurn"), dict) else {}
        self.permission_mode = str(meta.get("permissionMode") or "")
        # A slot is saved only when set, and every meta is whole: a missing key means none (an /accept clear).
        kept = {key: self.slots[key] for key in JOURNALED_WHEN_CHANGED if key in self.slots and key not in meta}
        self.slots = {**kept, **{key: value for key, value in meta.items() if key not in _OWN_KEYS}}


# Meta keys the Session reads itself (and keys of the snapshot document around them); any other is a slot.
_OWN_KEYS = frozenset({"id", "workspace", "model", "createdAt", "updatedAt", "taskState", "lastSeq", "turns",
                       "allowedTools", "usage", "harvestCursor", "generation", "messages", "openTurn",
                       "permissionMode"})
JOURNALED_WHEN_CHANGED = ("compaction", "turnDigests", "checkpoints", "rewindValues")
"""Bulky slots a journal record carries only when their value changed: a record without one keeps it."""


# ---- message shape: Chat Completions in memory, camelCase on disk ----


def preview_text(content: Any, limit: int = 80) -> str:
    """What a user typed, for a list: the text parts of a message with images (each image one
    ``[image]``), without the ``<attachment>`` blocks appended to it, on one line."""
    if isinstance(content, list):
        words = [str(p.get("text", "")) if p.get("type") == "text" else "[image]"
                 for p in content if isinstance(p, dict)]
        text = " ".join(w for w in words if w)
    else:
        text = str(content or "")
    text = text.split("\n\n<attachment ", 1)[0]
    return " ".join(text.split())[:limit]


def message_to_disk(message: Message) -> Message:
    """A Chat Completions message in the session file's camelCase shape."""
    out: Message = {"role": message.get("role", "")}
    content = message.get("content")
    out["content"] = content if content is not None else ""
    if message.get("reasoning"):
        out["reasoning"] = message["reasoning"]
    if message.get("tool_calls"):
        out["toolCalls"] = [
            {
                "id": call.get("id", ""),
                "name": call.get("function", {}).get("name", ""),
                "arguments": call.get("function", {}).get("arguments", ""),
            }
            for call in message["tool_calls"]
        ]
    if message.get("tool_call_id"):
        out["toolCallId"] = message["tool_call_id"]
    if message.get("name"):
        out["name"] = message["name"]
    out["timestamp"] = message.get("_ts") or time.time()
    return out


def message_from_disk(raw: Message) -> Message:
    """The inverse of :func:`message_to_disk`."""
    message: Message = {"role": str(raw.get("role", "")), "content": raw.get("content", "")}
    if raw.get("reasoning"):
        message["reasoning"] = raw["reasoning"]
    if raw.get("toolCalls"):
        message["tool_calls"] = [
            {
                "id": call.get("id", ""),
                "type": "function",
                "function": {"name": call.get("name", ""), "arguments": call.get("arguments", "")},
            }
            for call in raw["toolCalls"]
        ]
    if raw.get("toolCallId"):
        message["tool_call_id"] = raw["toolCallId"]
    if raw.get("name"):
        message["name"] = raw["name"]
    if raw.get("timestamp"):
        message["_ts"] = raw["timestamp"]
    return message


