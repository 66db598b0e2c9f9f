"""Client messages of the turn stream as plain dataclasses (convert.py builds them)."""

from __future__ import annotations

from dataclasses import dataclass

from services.loop.core.approvals import Decision
from services.loop.core.attachments import InputFile
from services.loop.core.domain import InterruptScope


@dataclass(frozen=True)
class Start:
    session_id: str
    input: str
    attachments: tuple[InputFile, ...] = ()
    editor_buffers: bool = False
    """The stream answers BufferRequested while it is open (an editor client)."""


@dataclass(frozen=True)
class Attach:
    session_id: str
    after_seq: int


@dataclass(frozen=True)
class ApprovalAnswer:
    request_id: str
    # None when the client sent no usable decision (counts as deny).
    decision: Decision | None


@dataclass(frozen=True)
class QuestionReply:
    request_id: str
    answer: str


@dataclass(frozen=True)
class BufferAnswer:
    """An editor's text for a BufferRequested (``text`` None: the editor has none)."""

    request_id: str
    text: str | None


@dataclass(frozen=True)
class InterruptRequest:
    scope: InterruptScope


@dataclass(frozen=True)
class Queue:
    input: str
    attachments: tuple[InputFile, ...] = ()


@dataclass(frozen=True)
class StartPlan:
    """``/plan <topic>``: a planning turn, then one step session per item."""

    session_id: str
    topic: str


@dataclass(frozen=True)
class Unknown:
    """A message with no recognised body."""


Inbound = Start | StartPlan | Attach | ApprovalAnswer | QuestionReply | BufferAnswer | InterruptRequest | Queue | Unknown
