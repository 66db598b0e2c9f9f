"""The read tool through the user's editor: a file open there with unsaved changes reads as the editor shows it.

The tools service reads first, as always: its path checks (inside the workspace roots, no symlink
escape, the size limit) and the permission gate decide whether the file may be read at all, and it
records the disk snapshot its stale-edit check compares with. Only then, when an editor client
(``ai-coding acp`` with the client's ``fs.readTextFile``) follows the session, the loop asks it for
the same path (a ``BufferRequested`` event; the answer is a ``BufferReply`` on the turn stream). The
editor never chooses a path, and nothing else about the call changes: writes and edits still go to
the file on disk through the sandboxed tools service, so the result says so when the two differ.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from services.loop.core.approvals import Decision, Pending, RequestKind
from services.loop.core.domain import ToolOutcome
from services.loop.core.turn_events import BufferRequested, EventBody
from services.tools import limits
from services.tools.files import number_lines

BUFFER_TIMEOUT_S = 5.0
"""How long a read waits for the editor's buffer before the disk text stands."""


def editor_path(workspace: str, shown: str) -> str | None:
    """The absolute path to ask the editor for: the tools service's display path, only inside the workspace."""
    root = os.path.realpath(workspace)
    path = os.path.realpath(os.path.join(root, shown))
    return path if os.path.commonpath([root, path]) == root and path != root else None


def buffer_page(text: str, shown: str, offset: int, limit: int) -> str:
    """The page of the editor's text the read asked for, numbered like the tools service's read."""
    lines = text.splitlines()
    page = lines[offset - 1: offset - 1 + limit]
    last = offset - 1 + len(page)
    if not lines:
        return f"({shown} is empty)"
    if not page:
        return f"({shown} has {len(lines)} lines; offset {offset} is past the end)"
    output = number_lines(page, offset)
    if last < len(lines):
        output += f"\n[{len(lines) - last} more lines: read again with offset={last + 1}]"
    return output


def unsaved_note(shown: str) -> str:
    return (f"\n[{shown} has unsaved changes in the user's editor: shown as the editor has it. edit and "
            "write change the file on disk; ask the user to save first if your change builds on these lines]")


async def with_buffer(outcome: ToolOutcome, arguments: dict[str, Any], workspace: str, pending: Pending,
                      emit: Callable[[EventBody], None], wait: float = BUFFER_TIMEOUT_S) -> ToolOutcome:
    """``outcome`` of a successful read (of ``arguments``), its page replaced by the editor's unsaved text
    when that differs."""
    shown = str(outcome.data.get("path", ""))
    path = editor_path(workspace, shown) if shown else None
    if path is None:
        return outcome
    request_id, future = pending.open(RequestKind.BUFFER)
    emit(BufferRequested(request_id=request_id, path=path))
    try:
        resolution = await asyncio.wait_for(future, timeout=max(wait, 0.01))
    except TimeoutError:
        pending.forget(request_id)
        return outcome
    if resolution.source != "editor" or resolution.decision != Decision.ALLOW_ONCE:
        return outcome
    text = resolution.answer
    if len(text.encode("utf-8", "replace")) > limits.READ_MAX_BYTES:
        return outcome
    offset = max(int(arguments.get("offset", 1)), 1)
    limit = max(int(arguments.get("limit", limits.READ_DEFAULT_LIMIT)), 1)
    page = buffer_page(text, shown, offset, limit)
    if page == outcome.output:
        return outcome
    lines = text.splitlines()
    shown_lines = len(lines[offset - 1: offset - 1 + limit])
    data = {**outcome.data, "total_lines": len(lines), "lines_returned": shown_lines, "source": "editor_buffer",
            "truncated": offset - 1 + shown_lines < len(lines)}
    return replace(outcome, output=page + unsaved_note(shown), data=data)
