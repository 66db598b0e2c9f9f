"""The one seam every session feature plugs into.

A session feature (compaction, subagents, plans and acceptance, hooks, skills, the trace
writer, the memory harvest, and every later one) is a ``SessionFeature``: built once per
session from a ``FeatureHost`` (what it may use of the session), it contributes its tools,
its part of each step's request, an event listener, its slash commands, a typed persisted
state slot, what it resolves (approvals, answers), its shutdown, and at most one of the
turn's roles (the context window, the hooks, the acceptance source). The session runtime
only composes the list (services/loop/session/features.py); ``Feature`` gives every member a
default that contributes nothing, so a feature states only what it adds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from services.loop.core.approvals import Resolution
from services.loop.core.events import Event, EventLog
from services.loop.core.ports import (
    AcceptanceSource,
    ContextWindow,
    McpClient,
    MemoryClient,
    ModelClient,
    ToolDef,
    ToolIndex,
    ToolRunner,
    TurnContext,
    TurnHooks,
    Usage,
)
from services.loop.core.sessions import Session
from services.loop.core.turn_events import EventBody, SubagentScope
from services.loop.policy.permissions import Verdict
from services.loop.policy.settings import LoopSettings

T = TypeVar("T")
Emit = Callable[[EventBody], None]
Command = Callable[[str], Awaitable[tuple[str, str]]]
"""A slash command: its argument text -> ``(text to print, JSON for programs)``."""


@dataclass(frozen=True)
class QueuedRun:
    """A queued run a feature asked for (``/plan <topic>``): shown as ``label``, run as a turn."""

    label: str
    run: Callable[[int], Awaitable[None]]


@dataclass(frozen=True)
class RewindPoint:
    """Where a conversation rewind takes a session back to: the end of turn ``turn``."""

    turn: int
    messages: int
    """How many messages of the record are kept (the ones of turns 1..``turn``)."""
    saved: Mapping[str, Any] = field(default_factory=dict)
    """Every state slot's raw JSON as it was saved at the end of that turn (a key left out had no value)."""
    since: float = 0.0
    """When the first dropped turn started (work started since belongs to the dropped turns)."""


@dataclass(frozen=True)
class StateSlot(Generic[T]):
    """A feature's persisted state: one key of the session file's meta (camelCase, the spec's
    shape), with its own codec. ``decode`` gets the key's raw JSON (None when absent) and must
    accept anything a corrupt file holds; ``encode`` returning None leaves the key out.

    A conversation rewind puts every slot back to its value at the end of the turn it keeps (the
    checkpoints feature records each slot's raw JSON at every turn's end), so a new feature's state
    rewinds with the conversation for free; ``rewind`` replaces that for a slot whose value must be
    derived instead (current value, point -> value at the point)."""

    key: str
    decode: Callable[[Any], T]
    encode: Callable[[T], Any]
    rewind: Callable[[T, RewindPoint], T] | None = None

    def rewound(self, session: Session, point: RewindPoint) -> None:
        """Put this slot of ``session`` back to its value at ``point``."""
        if self.rewind is not None:
            self.write(session, self.rewind(self.read(session), point))
        else:
            self.write(session, self.decode(point.saved.get(self.key)))

    def read(self, session: Session) -> T:
        """This slot's value in ``session`` (decoded from its raw JSON; absent: ``decode(None)``)."""
        return self.decode(session.slots.get(self.key))

    def write(self, session: Session, value: T) -> None:
        """Put ``value`` into ``session``'s record (saved with its next save)."""
        raw = self.encode(value)
        if raw is None:
            session.slots.pop(self.key, None)
        else:
            session.slots[self.key] = raw


class FeatureHost(Protocol):
    """What a feature may use of its session (``session.runtime.SessionRuntime`` is one)."""

    @property
    def session(self) -> Session: ...
    @property
    def settings(self) -> LoopSettings: ...
    @property
    def model(self) -> ModelClient: ...
    @property
    def runner(self) -> ToolRunner: ...
    @property
    def memory(self) -> MemoryClient | None: ...
    @property
    def mcp(self) -> McpClient | None: ...
    @property
    def interactive(self) -> bool: ...
    @property
    def idle(self) -> bool: ...
    @property
    def skill_dirs(self) -> list[str]:
        """``--skills DIR``: skill directories replacing the defaults."""
        ...
    @property
    def instructions(self) -> str: ...
    @property
    def tools(self) -> ToolIndex: ...
    @property
    def events(self) -> EventLog: ...
    @property
    def deps(self) -> Any:
        """The service's ``LoopDeps`` (config sections, ports)."""
        ...
    @property
    def hooks(self) -> TurnHooks: ...
    @property
    def context(self) -> ContextWindow: ...

    def emit_now(self, body: EventBody, scope: SubagentScope | None = None) -> None:
        """Emit ``body`` as part of the running (or last) turn."""
        ...

    def gate(self, tool: ToolDef, arguments: dict[str, Any]) -> Verdict: ...

    def add_usage(self, usage: Usage) -> None: ...

    def save(self) -> None: ...

    def feature(self, kind: type[T]) -> T | None:
        """The session's feature of this class, if it is composed in."""
        ...

    def set_instructions_base(self, catalog: str) -> None:
        """Rebuild the system message with ``catalog`` (a declared cache break)."""
        ...

    def turn_context(self) -> TurnContext:
        """What a turn of this session reads and calls (a plan runs its steps on it)."""
        ...

    def set_turn(self, turn: Any) -> None:
        """Make ``turn`` (a ``turn.pipeline.Turn``) the session's running one: approvals and
        interrupts reach it."""
        ...

    def enqueue(self, label: str, run: Callable[[int], Awaitable[None]]) -> None:
        """Run ``run(turn number)`` as the session's next turn (queued behind a running one)."""
        ...

    def rewind_conversation(self, point: RewindPoint, task_state: dict[str, Any]) -> int:
        """Take the idle session back to ``point``: cut its messages, set its todo list to
        ``task_state`` and its turn count to ``point.turn``, and rewind every feature
        (``SessionFeature.rewind``); saves. Returns how many messages were dropped."""
        ...


class SessionFeature(Protocol):
    """One feature of a session, as the runtime composes it."""

    name: str
    slots: tuple[StateSlot[Any], ...]
    context: ContextWindow | None
    hooks: TurnHooks | None
    acceptance: AcceptanceSource | None
    warnings: list[str]

    def tools(self) -> list[ToolDef]: ...
    async def step_part(self, emit: Emit) -> dict[str, str]: ...
    def on_event(self, event: Event) -> None: ...
    def commands(self) -> dict[str, Command]: ...
    def resolve(self, resolution: Resolution) -> bool: ...
    def installed(self) -> None: ...
    async def opened(self) -> None: ...
    def turn_starting(self, number: int) -> None: ...
    def turn_ended(self) -> None: ...
    def after_turn(self) -> None: ...
    def before_save(self) -> None: ...
    def rewind(self, session: Session, point: RewindPoint) -> None: ...
    def busy(self) -> bool: ...
    def reconfigure(self, deps: Any) -> None: ...
    def model_changed(self, model: ModelClient) -> None: ...
    async def shutdown(self) -> None: ...


FeatureFactory = Callable[[FeatureHost], SessionFeature]
"""Builds a feature for one session (the composition list holds these)."""


class Feature:
    """A ``SessionFeature`` that contributes nothing: subclass it and override what you add."""

    name = ""
    slots: tuple[StateSlot[Any], ...] = ()
    """The state this feature keeps in the session record (read when built, written in ``before_save``)."""
    context: ContextWindow | None = None
    hooks: TurnHooks | None = None
    acceptance: AcceptanceSource | None = None

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def tools(self) -> list[ToolDef]:
        """Tools registered into the session's registry when it opens."""
        return []

    async def step_part(self, emit: Emit) -> dict[str, str]:
        """Tail blocks (name -> body) for every step's request."""
        return {}

    def on_event(self, event: Event) -> None:
        """Every event the session emits, in order."""

    def commands(self) -> dict[str, Command]:
        """Slash commands by name (without the slash)."""
        return {}

    def resolve(self, resolution: Resolution) -> bool:
        """Settle an approval or answer this feature asked for; False when not its own."""
        return False

    def installed(self) -> None:
        """Every feature's tools are in the session's registry (load a deferred one here)."""

    async def opened(self) -> None:
        """The session is open (its tools attached)."""

    def turn_starting(self, number: int) -> None:
        """Turn ``number`` is about to run (a user turn or a queued run)."""

    def turn_ended(self) -> None:
        """After the clients had turn_finished (the journal is folded)."""

    def after_turn(self) -> None:
        """A user turn ended normally."""

    def before_save(self) -> None:
        """The session is about to be saved: put live state into the record."""

    def rewind(self, session: Session, point: RewindPoint) -> None:
        """The conversation went back to ``point``: every slot takes its value there. A feature
        that keeps live state (or work under way) beyond its slots overrides this, calls it, then
        re-reads its slots (or stops what belongs to the dropped turns)."""
        for slot in self.slots:
            slot.rewound(session, point)

    def busy(self) -> bool:
        """Work of this feature still runs between turns (the session stays followed and in memory)."""
        return False

    def reconfigure(self, deps: Any) -> None:
        """An idle session took a re-read configuration."""

    def model_changed(self, model: ModelClient) -> None:
        """``/model`` switched the session's model."""

    async def shutdown(self) -> None:
        """The session stops (service shutdown): cancel what runs."""


def feature_role(features: list[SessionFeature], role: str, default: Any) -> Any:
    """The first feature's answer for one of the turn's roles (context window, hooks, acceptance)."""
    return next((getattr(f, role) for f in features if getattr(f, role) is not None), default)


def check_slot_keys(features: list[SessionFeature]) -> None:
    """Each feature keeps its state under a key of its own (two under one would overwrite each other)."""
    keys = [slot.key for feature in features for slot in feature.slots]
    if len(keys) != len(set(keys)):
        raise AssertionError(f"two session features keep state under one key: {sorted(keys)}")
