"""Server-to-client requests of a turn: approvals and ask_user questions.

Each request gets an id scoped to the turn (``t<turn>-<kind><n>``) and a future
the pipeline awaits. Answers are matched by id; an answer for an unknown or
already-resolved id changes nothing (the pipeline's wait already counted it as
deny), a malformed one resolves the request as deny, and the turn's end
clears whatever is still pending (deny, source ``turn_ended``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import StrEnum


class RequestKind(StrEnum):
    """What a pending request asks for (its letter appears in the request id)."""

    APPROVAL = "a"
    QUESTION = "q"
    BUFFER = "b"


class Decision(StrEnum):
    """An answer to an approval request."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    DENY = "deny"
    STOP = "stop"


@dataclass(frozen=True)
class Resolution:
    """How a request ended: the decision (or answer text) and who decided."""

    request_id: str
    decision: Decision
    answer: str = ""
    # "user", "auto", "timeout", "malformed", "turn_ended".
    source: str = "user"


class Pending:
    """The open requests of one turn."""

    def __init__(self, turn: int, prefix: str = "") -> None:
        self.turn = turn
        self.prefix = prefix or f"t{turn}"
        """Ids are ``<prefix>-<kind><n>``: a subagent child's carry its run id (never a parent's id)."""
        self._counter = 0
        self._futures: dict[str, asyncio.Future[Resolution]] = {}
        self._kinds: dict[str, RequestKind] = {}

    def open(self, kind: RequestKind) -> tuple[str, asyncio.Future[Resolution]]:
        """A new request id and its future."""
        self._counter += 1
        request_id = f"{self.prefix}-{kind.value}{self._counter}"
        future: asyncio.Future[Resolution] = asyncio.get_running_loop().create_future()
        self._futures[request_id] = future
        self._kinds[request_id] = kind
        return request_id, future

    def resolve(self, resolution: Resolution) -> bool:
        """Settle a pending request; False when the id is unknown or already settled."""
        future = self._futures.pop(resolution.request_id, None)
        self._kinds.pop(resolution.request_id, None)
        if future is None or future.done():
            return False
        future.set_result(resolution)
        return True

    def kind(self, request_id: str) -> RequestKind | None:
        """What an open request asks for (None: not open)."""
        return self._kinds.get(request_id)

    def forget(self, request_id: str) -> None:
        """Drop a request the pipeline stopped waiting for (timeout)."""
        self._futures.pop(request_id, None)
        self._kinds.pop(request_id, None)

    def clear(self) -> dict[str, RequestKind]:
        """Deny everything still pending (the turn ended); returns the cleared ids and their kinds."""
        cleared = {request_id: self._kinds[request_id] for request_id in self._futures}
        for request_id in cleared:
            self.resolve(Resolution(request_id, Decision.DENY, source="turn_ended"))
        return cleared

    def ids(self) -> list[str]:
        return list(self._futures)


def is_allowed(decision: Decision) -> bool:
    """Whether the call may run."""
    return decision in (Decision.ALLOW_ONCE, Decision.ALLOW_ALWAYS)
