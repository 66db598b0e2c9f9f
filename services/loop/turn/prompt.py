"""Request assembly: a stable prefix, the history, then a volatile tail.

The system message (base instructions, the project's AGENTS.md and CLAUDE.md
files, the skill catalog, the MCP catalog) is fixed for the life of a session and the
history only grows, so the stable part of request N is a byte prefix of request
N+1 and a provider's prefix cache keeps hitting. The MCP catalog changes only
when the set of servers or tools does; that is a declared cache break (see
``with_mcp_catalog``). Everything that changes each step (memory constraints,
task state, hook context, working memory, the environment) is appended to the
request's last message (the user's input or the last tool result) and never
stored in the history, so everything before it is byte-identical in the next
request.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from typing import Any, ClassVar

from services.loop.core.pairing import is_paired, repair_pairing

Message = dict[str, Any]

BASE_INSTRUCTIONS = """\
You are ai-coding, a coding agent working in the user's repository through tools.
Work in small verified steps: read before you edit, make the smallest change that solves the
problem, then run the relevant tests or commands to check it. Prefer the dedicated file tools
(read, edit, write, glob, grep) over shell equivalents; use bash for builds, tests and git.
Paths are relative to the workspace root; you cannot leave it.
Some tools are not listed until you need them: call tool_search with a few keywords to load them.
For work with several steps keep a task list with todo_write and update it as you go.
When a tool fails, read its error and hint and change approach instead of repeating the same call.
Ask the user (ask_user) only when a decision really needs them; otherwise state your assumption.
When you are done, answer briefly: what you changed, how you checked it, what is left."""

TAIL_ORDER = (
    "memory-constraints",
    "task-state",
    "hook-context",
    "working-memory",
    "environment",
)


def build_instructions(base: str, notes: str, skill_catalog: str) -> str:
    """The stable system message text (``notes``: the rendered ``<project-notes>`` blocks, see
    services/loop/core/instructions.py)."""
    parts = [base.strip()]
    if notes.strip():
        parts.append(notes.strip())
    if skill_catalog.strip():
        parts.append(f"<skills>\n{skill_catalog.strip()}\n</skills>")
    return "\n\n".join(parts)


def with_mcp_catalog(instructions: str, catalog: str) -> str:
    """The system message with the MCP catalog as its last block (unchanged when there is none).

    Placed in the stable prefix, not the tail: 5-7 KB for a few servers was re-sent uncached on
    every step. It changes only when the servers' tool set does, which breaks the cache once.
    """
    body = catalog.strip()
    return f"{instructions}\n\n<mcp-catalog>\n{body}\n</mcp-catalog>" if body else instructions


def environment_block(workspace: str, model: str) -> str:
    """The ``<environment>`` tail block body."""
    return f"workspace: {workspace}\nplatform: {platform.system()} {platform.machine()}\nmodel: {model}"


def tail_blocks(parts: dict[str, str]) -> list[tuple[str, str]]:
    """Non-empty tail parts in their fixed order (then any other, by name), each wrapped in its tag."""
    out: list[tuple[str, str]] = []
    for name in (*TAIL_ORDER, *sorted(set(parts) - set(TAIL_ORDER))):  # a feature's own parts come last
        body = (parts.get(name) or "").strip()
        if body:
            out.append((name, f"<{name}>\n{body}\n</{name}>"))
    return out


def for_request(message: Message) -> Message:
    """A history message as sent: private keys (``_ts``) left out. Stored ``reasoning`` stays:
    the model client sends it back or drops it by its provider's rule."""
    if not any(k.startswith("_") for k in message):
        return message
    return {k: v for k, v in message.items() if not k.startswith("_")}


def approx_bytes(message: Message) -> int:
    """Bytes a history message adds to a request, without serializing it (cheap on long sessions)."""
    size = 40 + len(str(message.get("content") or ""))
    for call in message.get("tool_calls") or ():
        size += 60 + len(call.get("function", {}).get("arguments", ""))
    return size


class _LastTools:
    """The specs last measured and their size (one entry: sessions mostly send the same list)."""

    specs: ClassVar[list[dict[str, Any]]] = []
    size: ClassVar[int] = 2


def tools_bytes(tools: list[dict[str, Any]]) -> int:
    """Bytes of the tool definitions as sent; the same spec objects as last time (the registry's
    own dicts, step after step) are not serialized again."""
    last = _LastTools
    if len(last.specs) == len(tools) and all(a is b for a, b in zip(last.specs, tools, strict=True)):
        return last.size
    last.specs, last.size = list(tools), len(json.dumps(tools).encode())
    return last.size


@dataclass(frozen=True)
class RequestStats:
    """Bytes per part of one request (for ContextAssembled and the bench)."""

    instructions_bytes: int
    tools_bytes: int
    history_bytes: int
    tail_bytes: int
    tail_parts: dict[str, int]

    @property
    def estimated_tokens(self) -> int:
        # ~4 bytes per token for English text and JSON; only an estimate.
        return (self.instructions_bytes + self.tools_bytes + self.history_bytes + self.tail_bytes) // 4


def assemble(
    instructions: str,
    history: list[Message],
    tail: list[tuple[str, str]],
    tools: list[dict[str, Any]],
) -> tuple[list[Message], RequestStats]:
    """The request's messages and their byte attribution (builds the history view from scratch)."""
    view = HistoryView()
    clean, history_bytes = view.update(history)
    return assemble_view(instructions, clean, history_bytes, tail, tools)


def assemble_view(
    instructions: str,
    clean_history: list[Message],
    history_bytes: int,
    tail: list[tuple[str, str]],
    tools: list[dict[str, Any]],
) -> tuple[list[Message], RequestStats]:
    """Like :func:`assemble` over an already request-ready history (see :class:`HistoryView`)."""
    messages: list[Message] = [{"role": "system", "content": instructions}, *clean_history]
    tail_text = "\n".join(text for _, text in tail)
    if tail_text:
        last = messages[-1]
        if last["role"] in ("user", "tool") and isinstance(last.get("content"), str):
            messages[-1] = {**last, "content": f"{last['content']}\n\n{tail_text}"}
        else:
            messages.append({"role": "user", "content": tail_text})
    stats = RequestStats(
        instructions_bytes=len(instructions.encode()),
        tools_bytes=tools_bytes(tools),
        history_bytes=history_bytes,
        tail_bytes=len(tail_text.encode()),
        tail_parts={name: len(text.encode()) for name, text in tail},
    )
    return messages, stats


class HistoryView:
    """The request-ready, pairing-checked form of a session's history, kept up to date
    incrementally: a step costs what it appended, not the length of the session.

    Valid while the history only grows; when it was rewritten (shorter, or the last seen
    message is no longer in place) the view is rebuilt from scratch.
    """

    def __init__(self) -> None:
        self._clean: list[Message] = []
        self._bytes = 0
        self._last: Message | None = None
        self.repairs = 0

    def _reset(self) -> None:
        self._clean, self._bytes, self._last = [], 0, None

    def update(self, history: list[Message]) -> tuple[list[Message], int]:
        """``(messages as sent, approximate bytes)`` for ``history``; repairs pairing if needed."""
        seen = len(self._clean)
        if len(history) < seen or (seen and history[seen - 1] is not self._last):
            self._reset()
            seen = 0
        new = history[seen:]
        if new and not is_paired(new):
            repaired, fixes = repair_pairing(history)
            self.repairs += fixes
            history[:] = repaired
            self._reset()
            seen, new = 0, history
        self._clean.extend(for_request(m) for m in new)
        self._bytes += sum(approx_bytes(m) for m in new)
        self._last = history[-1] if history else None
        return self._clean, self._bytes
