"""One saved session in one line, the same wherever sessions are listed: ``sessions list``, the
/resume picker and its completions, and the candidates ``-r``/``--resume`` prints when it cannot pick.
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol

PREVIEW_CHARS = 80
"""The preview's width in the line (the first prompt, whitespace folded to single spaces)."""


class SessionLike(Protocol):
    """A saved session as ListSessions describes it (the proto summary or the REPL's row)."""

    @property
    def session_id(self) -> str: ...
    @property
    def last_activity(self) -> float: ...
    @property
    def preview(self) -> str: ...
    @property
    def message_count(self) -> int: ...


def session_line(row: SessionLike, *, dated: bool = False) -> str:
    """``14:03  fix the failing test  (12 messages)  0193a5c2e1f4b7d2a9c0``: the time of the last
    activity (with its date when ``dated``: a list not grouped by day), the preview cut to
    ``PREVIEW_CHARS`` with an ellipsis, and the whole id (what ``-r`` and /resume take; its first
    12 characters are a timestamp, so a shorter cut can name two sessions)."""
    when = dt.datetime.fromtimestamp(row.last_activity).strftime("%Y-%m-%d %H:%M" if dated else "%H:%M")
    preview = " ".join(row.preview.split())
    if len(preview) > PREVIEW_CHARS:
        preview = preview[: PREVIEW_CHARS - 1] + "…"
    messages = "1 message" if row.message_count == 1 else f"{row.message_count} messages"
    return f"{when}  {preview or '(empty)'}  ({messages})  {row.session_id}"
