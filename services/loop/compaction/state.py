"""What compaction decided for a session: a checkpoint, overlays and omissions over the record.

The session's messages are never changed: compaction only changes the *view*
(what a request carries). The view is a pure assembly::

    [checkpoint note] + messages[consumed:]   with overlays applied and omitted ranges as one marker each

- the checkpoint (L4) covers ``messages[:consumed]`` with a model-written summary;
  its ``anchor`` is a content fingerprint of that prefix, so a rewritten
  history is detected and the checkpoint dropped instead of trusted;
- an overlay (L2 envelope, L3 placeholder) replaces one message's content in
  the view; it carries the digest of the content it replaces and is ignored if
  that message changed;
- an omission (L1 snip, fallback trim) hides a range, archived beforehand, and
  shows one marker saying so and where to look.

The state is small JSON kept in the session file (``compaction``), so the view
survives a restart and a kill -9 reloads either the old or the new state,
never half of one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

Message = dict[str, Any]

NOTE_PREFIX = "[checkpoint]"


def content_digest(message: Message) -> str:
    """A short digest of what a message says (role, text, tool calls and call id)."""
    h = hashlib.blake2b(digest_size=12)
    _feed(h, message)
    return h.hexdigest()


class Digests:
    """``content_digest`` per record index, computed once per message object: a session's record only
    grows and its messages are replaced, never edited in place, so an overlay's check costs a dict
    lookup on every later request instead of hashing the body again. One per session (the keeper's)."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Message, str]] = {}

    def of(self, messages: list[Message], index: int) -> str:
        message = messages[index]
        hit = self._memo.get(index)
        if hit is not None and hit[0] is message:
            return hit[1]
        digest = content_digest(message)
        self._memo[index] = (message, digest)
        return digest


def _feed(h: Any, message: Message) -> None:
    h.update(str(message.get("role", "")).encode())
    h.update(b"\x00")
    h.update(str(message.get("content") or "").encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        h.update(f"{call.get('id', '')}\x01{function.get('name', '')}\x01{function.get('arguments', '')}".encode(
            "utf-8", "surrogatepass"))
    h.update(str(message.get("tool_call_id", "")).encode())
    h.update(b"\x02")


def chain_anchor(previous: str, messages: list[Message]) -> str:
    """Extend an anchor over more messages: anchor(a..c) = H(anchor(a..b) + messages[b:c])."""
    h = hashlib.blake2b(previous.encode(), digest_size=16)
    for message in messages:
        _feed(h, message)
    return h.hexdigest()


def anchor_of(messages: list[Message], marks: tuple[int, ...]) -> str:
    """The anchor of ``messages[:marks[-1]]`` built segment by segment (as compactions built it)."""
    anchor, start = "", 0
    for mark in marks:
        anchor = chain_anchor(anchor, messages[start:mark])
        start = mark
    return anchor


@dataclass(frozen=True)
class Checkpoint:
    """L4's summary of ``messages[:consumed]``."""

    summary: str
    consumed: int
    anchor: str
    marks: tuple[int, ...]
    """The ``consumed`` of every checkpoint so far (the anchor is chained over these segments)."""
    request: str = ""
    """The user request that was active when the summary was written, kept verbatim."""

    def note(self) -> Message:
        """The checkpoint note: the first history message of every request while it stands."""
        text = (f"{NOTE_PREFIX} The conversation before this point was compacted into this summary "
                f"({self.consumed} messages, archived; history_search finds them):\n"
                f"<checkpoint>\n{self.summary.strip()}\n</checkpoint>")
        if self.request:
            text += f"\nThe user's request when this checkpoint was written (verbatim):\n" \
                    f"<user-request>\n{self.request}\n</user-request>"
        return {"role": "user", "content": text}


@dataclass(frozen=True)
class Overlay:
    """A replacement for one message's content in the view."""

    layer: str
    """"L2" (envelope) or "L3" (persisted placeholder)."""
    digest: str
    """content_digest of the message it replaces."""
    content: str


@dataclass(frozen=True)
class Omission:
    """``messages[start:end]`` hidden behind one marker (archived first)."""

    start: int
    end: int
    kind: str
    """"snipped" (L1) or "overflow" (fallback trim)."""

    def marker(self) -> Message:
        n = self.end - self.start
        if self.kind == "snipped":
            text = f"[snipped {n} messages] (archived; history_search finds them)"
        else:
            text = f"[context overflow] {n} messages omitted; use history_search to find them"
        return {"role": "user", "content": text}


@dataclass(frozen=True)
class CompactionState:
    """Everything compaction keeps for one session (immutable; each change is a new value)."""

    checkpoint: Checkpoint | None = None
    overlays: Mapping[int, Overlay] = field(default_factory=dict)
    omissions: tuple[Omission, ...] = ()
    failures: int = 0
    """Summaries failed in a row (the circuit breaker opens at the configured count)."""
    compactions: int = 0
    """How many compactions changed the view (the view's generation)."""

    @property
    def consumed(self) -> int:
        return self.checkpoint.consumed if self.checkpoint else 0

    def to_json(self) -> dict[str, Any]:
        """The session file's ``compaction`` object."""
        out: dict[str, Any] = {"failures": self.failures, "compactions": self.compactions}
        if self.checkpoint:
            c = self.checkpoint
            out["checkpoint"] = {"summary": c.summary, "consumed": c.consumed, "anchor": c.anchor,
                                 "marks": list(c.marks), "request": c.request}
        if self.overlays:
            out["overlays"] = {str(i): {"layer": o.layer, "digest": o.digest, "content": o.content}
                               for i, o in sorted(self.overlays.items())}
        if self.omissions:
            out["omissions"] = [{"start": o.start, "end": o.end, "kind": o.kind} for o in self.omissions]
        return out

    @staticmethod
    def from_json(raw: Any) -> CompactionState:
        """Read the ``compaction`` object; anything malformed reads as no state (the full history is
        the safe view: nothing is lost, the next step compacts again)."""
        if not isinstance(raw, dict):
            return CompactionState()
        try:
            checkpoint = None
            c = raw.get("checkpoint")
            if isinstance(c, dict):
                checkpoint = Checkpoint(str(c["summary"]), int(c["consumed"]), str(c["anchor"]),
                                        tuple(int(m) for m in c.get("marks") or [c["consumed"]]),
                                        str(c.get("request", "")))
            overlays = {int(i): Overlay(str(o["layer"]), str(o["digest"]), str(o["content"]))
                        for i, o in (raw.get("overlays") or {}).items()}
            omissions = tuple(Omission(int(o["start"]), int(o["end"]), str(o["kind"]))
                              for o in raw.get("omissions") or [])
            return CompactionState(checkpoint, overlays, omissions, int(raw.get("failures", 0)),
                                   int(raw.get("compactions", 0)))
        except (KeyError, TypeError, ValueError, AttributeError):
            return CompactionState()


def validate(messages: list[Message], state: CompactionState) -> tuple[CompactionState, str]:
    """``(state, why it was dropped or "")``: a checkpoint whose anchor no longer matches the record's
    prefix (history rewritten or shortened) is dropped with everything that builds on it."""
    c = state.checkpoint
    if c is not None and (len(messages) < c.consumed or anchor_of(messages, c.marks) != c.anchor):
        return CompactionState(failures=state.failures, compactions=state.compactions + 1), \
            "the history before the checkpoint changed; it will be summarized again"
    if any(o.end > len(messages) for o in state.omissions) or any(i >= len(messages) for i in state.overlays):
        return replace(state, overlays={}, omissions=(), compactions=state.compactions + 1), \
            "the history is shorter than the compaction state; showing it whole"
    return state, ""


def visible_indices(n: int, state: CompactionState) -> list[int]:
    """Record indices the view shows verbatim or overlaid (not consumed, not omitted)."""
    hidden = [(o.start, o.end) for o in state.omissions]
    out: list[int] = []
    i = state.consumed
    for start, end in sorted(hidden):
        if end <= i:
            continue
        out.extend(range(i, max(start, i)))
        i = max(i, end)
    out.extend(range(i, n))
    return out


def view_message(messages: list[Message], index: int, state: CompactionState,
                 digests: Digests | None = None) -> Message:
    """One record message as the view shows it."""
    message = messages[index]
    overlay = state.overlays.get(index)
    if overlay is None:
        return message
    if (digests.of(messages, index) if digests is not None else content_digest(message)) != overlay.digest:
        return message
    return {**message, "content": overlay.content}


def build_view(messages: list[Message], state: CompactionState, digests: Digests | None = None) -> list[Message]:
    """The request's history: checkpoint note, then what follows ``consumed``, overlays applied,
    each omitted range as its marker. Pure: no model call, no I/O."""
    out: list[Message] = []
    if state.checkpoint is not None:
        out.append(state.checkpoint.note())
    markers = {o.start: o for o in state.omissions if o.end > state.consumed}
    i, n = state.consumed, len(messages)
    while i < n:
        omission = markers.get(i)
        if omission is not None:
            out.append(omission.marker())
            i = omission.end
            continue
        out.append(view_message(messages, i, state, digests) if i in state.overlays else messages[i])
        i += 1
    return out
