"""Saved and open sessions as the client shows them (open, list, detail, a command's reply): plain values.

:mod:`clients.cli.convert` builds them from the loop's answers; stdlib only, like :mod:`clients.cli.views`.
"""

from __future__ import annotations

from clients.cli.records import record


@record
class OpenedSession:
    """What OpenSession answered: the session's id, size, last event and model, and warnings to show."""

    session_id: str = ""
    message_count: int = 0
    last_seq: int = 0
    model: str = ""
    warnings: tuple[str, ...] = ()


@record
class SessionSummary:
    """One saved session in a list: id, when it was created and last active, a preview and its size."""

    session_id: str = ""
    created: float = 0.0
    last_activity: float = 0.0
    preview: str = ""
    message_count: int = 0
    open: bool = False


@record
class UnreadableSession:
    """A saved session the loop could not read: its file, why, and what to do."""

    session_id: str = ""
    path: str = ""
    reason: str = ""
    hint: str = ""


@record
class SessionList:
    """ListSessions: the readable sessions (newest first) and the ones that could not be read."""

    sessions: tuple[SessionSummary, ...] = ()
    unreadable: tuple[UnreadableSession, ...] = ()


@record
class SessionDetail:
    """One session with its messages (JSON) and its plan, for a redraw after /resume."""

    summary: SessionSummary
    messages_json: str = ""
    plan_json: str = ""
    """The last /plan run's receipts (JSON; "" when none), replayed as step headers."""


@record
class CommandReply:
    """What a slash command the loop handles answered: text to show, and data (JSON)."""

    text: str = ""
    data_json: str = ""
