"""``ContextKeeper``: a session's compaction state at work in its turns.

The turn asks it for the history of every request (``prepare``): the
checkpoint view of the record, compacted first when the request would reach
the ceiling. It remembers what the provider last reported so the trigger is
``max(reported, estimate)``, holds the working-memory ring and the
``checkpoint_write`` note, and answers ``history_search``.

Persistence: ``to_meta`` goes into the session file with every save; a new
state replaces the old one in memory only once its compaction has finished
(archive and bodies written first), so a kill -9 at any instant reloads either
the previous state or the new one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from services.kernel.tool_args import arg
from services.loop.compaction.history import HistoryIndex, HistorySearchArgs, local_search
from services.loop.compaction.layers import Inputs, envelope_floor, stale_tool_tokens
from services.loop.compaction.pipeline import Outcome, compact
from services.loop.compaction.settings import Budget, CompactionSettings, budget_for
from services.loop.compaction.state import CompactionState, Digests, build_view, validate
from services.loop.compaction.tokens import RunningBytes, should_compact, tokens_of_bytes
from services.loop.compaction.transcripts import Transcripts
from services.loop.core.domain import ToolOutcome
from services.loop.core.ports import MemoryClient, ModelClient, ToolCall, ToolContext, ToolDef
from services.loop.core.turn_events import CompactionEnded, CompactionStarted, Degraded, EventBody
from services.loop.model.settings import ModelSettings
from services.loop.policy.codes import ErrorCode
from services.loop.policy.permissions import Level
from services.loop.tools.args import define
from services.loop.turn.prompt import HistoryView, tools_bytes

Message = dict[str, Any]
Emit = Callable[[EventBody], None]

@dataclass(frozen=True)
class CheckpointNoteArgs:
    """``checkpoint_write``'s arguments."""

    note: str = arg()


AFTER_COMPACTION = ("history_search", "checkpoint_write")
"""The deferred tools a session is offered once compaction has archived something."""
CHECKPOINT_WRITE_DESCRIPTION = ("Say in one sentence where this turn stands; later turns see it after a compaction "
                                "(memory_write is for other sessions).")
HISTORY_SEARCH_DESCRIPTION = ("Search this session's messages that compaction took out of the context (tool outputs "
                              "too); returns the best matches in full.")


def model_limits(model: ModelClient) -> tuple[str, int | None, int | None]:
    """``(entry name, context window, max output tokens)`` of a model client, as far as it says."""
    settings = getattr(model, "settings", None)
    if isinstance(settings, ModelSettings):
        return settings.name, settings.context_window, settings.max_tokens
    return model.model_name, None, None


@dataclass
class _Observed:
    """The provider's prompt tokens for the last request, and our estimate of that same request."""

    reported: int = 0
    estimated: int = 0
    generation: int = -1


@dataclass
class WindowFill:
    """How full the window is, for /budget, the REPL status and ContextAssembled."""

    used: int
    ceiling: int
    window: int


@dataclass
class ContextKeeper:
    """The compaction side of one session."""

    settings: CompactionSettings
    budget: Budget
    session_id: str
    transcripts: Transcripts
    state: CompactionState = field(default_factory=CompactionState)
    digests: list[str] = field(default_factory=list)
    """The working-memory ring: one line per finished turn, newest last."""
    note: str = ""
    """This turn's checkpoint_write note."""
    compacted_this_turn: bool = False
    last_estimate: int = 0
    _ours: int = 0
    _observed: _Observed = field(default_factory=_Observed)
    _view: HistoryView = field(default_factory=HistoryView)
    _view_generation: int = 0
    _history_bytes: RunningBytes = field(default_factory=RunningBytes)
    _repairs_seen: int = 0
    _digests: Digests = field(default_factory=Digests)
    memory: MemoryClient | None = None
    """Indexes what compaction archives and answers history_search (None: the local archive does)."""
    history: HistoryIndex = field(init=False)
    reveal: Callable[[list[str]], None] | None = None
    """Offers deferred tools to the model from the next step (the session's ``ToolRegistry.load``)."""

    @property
    def enabled(self) -> bool:
        """Compaction may run before a step (``compaction.enabled``)."""
        return self.settings.enabled

    def fixed_tokens(self, instructions: str, tools: list[dict[str, Any]], tail_bytes: int) -> int:
        """Tokens of a request outside its history."""
        return fixed_tokens(instructions, tools, tail_bytes)

    def __post_init__(self) -> None:
        self.history = HistoryIndex(self.memory, self.transcripts, self.session_id)
        self._history_bytes = RunningBytes(envelope_floor(self.settings))

    @staticmethod
    def create(settings: CompactionSettings, model: ModelClient, session_id: str, workspace: str,
               meta: dict[str, Any], memory: MemoryClient | None = None) -> ContextKeeper:
        """A keeper for a session, its state read from the session file's ``compaction`` object;
        ``memory`` indexes what compaction archives and answers history_search (None: the local archive)."""
        entry, window, max_output = model_limits(model)
        transcripts = Transcripts(workspace)
        keeper = ContextKeeper(settings, budget_for(settings, entry, window, max_output), session_id,
                               transcripts, memory=memory)
        keeper.state = CompactionState.from_json(meta.get("compaction"))
        ring = meta.get("turnDigests")
        keeper.digests = [str(d) for d in ring][-settings.working_memory_keep:] if isinstance(ring, list) else []
        return keeper

    def rewound(self, state: CompactionState, digests: list[str]) -> None:
        """The conversation went back to an earlier turn: take the state it had then and forget every
        cache of the longer history (the view, its byte count, the provider's last token figure)."""
        self.state, self.digests, self.note, self.compacted_this_turn = state, digests, "", False
        self._view, self._view_generation, self._repairs_seen = HistoryView(), state.compactions, 0
        self._history_bytes = RunningBytes(envelope_floor(self.settings))
        self._observed, self._ours, self._digests = _Observed(), 0, Digests()

    def reconfigure(self, settings: CompactionSettings, model: ModelClient) -> None:
        """The config was reloaded: its ``compaction`` section (thresholds, layers, ring size) applies
        from the next request on; the state and what it covers stay."""
        self.settings = settings
        self._history_bytes = RunningBytes(envelope_floor(settings))
        self.set_model(model)
        self.digests = self.digests[-settings.working_memory_keep:] if settings.working_memory_keep else []

    def set_model(self, model: ModelClient) -> None:
        """The session switched model: its window gives the budget from now on."""
        entry, window, max_output = model_limits(model)
        self.budget = budget_for(self.settings, entry, window, max_output)

    def to_meta(self) -> dict[str, Any]:
        """What the session file keeps (``compaction``, ``turnDigests``)."""
        return {"compaction": self.state.to_json(), "turnDigests": list(self.digests)}

    def check(self, messages: list[Message]) -> str:
        """Drop a checkpoint whose anchor no longer matches the record (on load); returns why, or ""."""
        self.state, why = validate(messages, self.state)
        return why

    # -- requests ------------------------------------------------------------------------------------

    def view(self, messages: list[Message]) -> list[Message]:
        """The history a request carries (the record itself while nothing was compacted)."""
        if self.state == CompactionState(compactions=self.state.compactions, failures=self.state.failures):
            return messages
        return build_view(messages, self.state, self._digests)

    def request_history(self, messages: list[Message]) -> tuple[list[Message], int]:
        """The view as sent (private keys dropped, pairing checked) and its approximate bytes."""
        if self._view_generation != self.state.compactions:
            self._view = HistoryView()
            self._view_generation = self.state.compactions
        return self._view.update(self.view(messages))

    def estimates(self, messages: list[Message], fixed_tokens: int) -> tuple[int, int]:
        """``(the provider's last figure carried forward by what was added since, our estimate)`` of the
        next request; the provider's is 0 when unknown or from before the last compaction."""
        if self._view.repairs != self._repairs_seen:  # the request view rewrote pairing in place
            self._repairs_seen, self._history_bytes = self._view.repairs, RunningBytes(envelope_floor(self.settings))
        ours = fixed_tokens + tokens_of_bytes(self._history_bytes.of(self.view(messages), self.state))
        self._ours = ours
        seen = self._observed
        carried = seen.reported + (ours - seen.estimated) if seen.generation == self.state.compactions else 0
        self.last_estimate = max(ours, carried)
        return carried, ours

    def observe(self, prompt_tokens: int) -> None:
        """The provider's prompt tokens for the request just sent (0 = it did not say)."""
        if prompt_tokens > 0:
            self._observed = _Observed(prompt_tokens, self._ours, self.state.compactions)

    def fill(self) -> WindowFill:
        return WindowFill(self.last_estimate, self.budget.ceiling, self.budget.window)

    async def prepare(self, messages: list[Message], fixed_tokens: int, request: str, model: ModelClient,
                      emit: Emit, save: Callable[[], None], *, force: bool = False, hard: bool = False) -> bool:
        """Compact before a request when it would reach the ceiling (or when ``force`` / ``hard``);
        returns whether the view changed."""
        if not self.settings.enabled and not force:
            return False
        if model_limits(model)[1] not in (None, self.budget.window):  # a window the server stated (model client)
            self.set_model(model)
        carried, ours = self.estimates(messages, fixed_tokens)
        tokens = max(carried, ours)
        inp = Inputs(messages=messages, session_id=self.session_id, budget=self.budget, settings=self.settings,
                     transcripts=self.transcripts, fixed_tokens=fixed_tokens, digests=self._digests)
        light = False
        if not (force or hard or should_compact(carried, ours, self.budget.ceiling)):
            # Under the ceiling: only older verbatim tool output past the recent budget is enveloped (L2).
            # (Cheap first: stale output is among the view's large tool results, counted as they came.)
            light = bool(messages) and messages[-1].get("role") == "tool" and \
                tokens_of_bytes(self._history_bytes.large_tool_bytes) > self.budget.recent_tools and \
                stale_tool_tokens(inp, self.state) > self.budget.recent_tools
            if not light:
                return False
        reason = "manual /compact" if force else "the model refused the request as too long" if hard else (
            f"older tool output past the {self.budget.recent_tools} tokens kept verbatim" if light else
            f"~{tokens} tokens reached the ceiling of {self.budget.ceiling}")
        emit(CompactionStarted(estimated_tokens=tokens, reason=reason))
        inp = replace(inp, pinned=pinned_index(messages, request))
        outcome = await compact(inp, self.state, model, force=force, hard=hard, light=light)
        return self._adopt(outcome, emit, save)

    def _adopt(self, outcome: Outcome, emit: Emit, save: Callable[[], None]) -> bool:
        for why in outcome.degraded:
            emit(Degraded(component="compaction", reason=why))
        changed = outcome.state.compactions != self.state.compactions  # the view changed
        dirty = outcome.state != self.state  # or only the failure count
        self.state = outcome.state
        self.compacted_this_turn = self.compacted_this_turn or changed
        if dirty:
            save()  # the new state is durable before any request uses it
        self.history.archived()
        if self.reveal is not None and self.archived_something():
            self.reveal(list(AFTER_COMPACTION))
        self.last_estimate = outcome.after_tokens
        emit(CompactionEnded(layers=list(outcome.layers), estimated_before=outcome.before_tokens,
                             estimated_after=outcome.after_tokens))
        return changed

    # -- working memory ------------------------------------------------------------------------------

    def tail_part(self) -> dict[str, str]:
        """The ``<working-memory>`` block: only on a turn whose history was compacted."""
        if not self.compacted_this_turn or not self.digests:
            return {}
        return {"working-memory": "\n".join(self.digests)}

    def end_turn(self, number: int, status: str, request: str, answer: str, changed: list[str]) -> None:
        """Add this turn's digest to the ring (the checkpoint_write note replaces the result sentence)."""
        result = self.note or _first_sentence(answer) or "(no answer)"
        line = f"turn {number} [{status}]: {_one_line(request, 100)} -> {_one_line(result, 160)}"
        if changed:
            line += f" (changed {', '.join(changed[:5])})"
        self.digests = [*self.digests, line][-self.settings.working_memory_keep:]
        self.note = ""
        self.compacted_this_turn = False

    # -- tools ---------------------------------------------------------------------------------------

    def tool_defs(self) -> list[ToolDef]:
        """history_search and checkpoint_write, answered from this session's state. Both are deferred:
        offered from the step after the first compaction that archived something (before, there is
        nothing to search, and a note only matters once a digest stands in for the turns; a /plan
        run offers checkpoint_write from its start; a model naming either is still answered)."""
        return [define("history_search", HISTORY_SEARCH_DESCRIPTION, HistorySearchArgs, self._search_handler,
                       permission=Level.ALLOW, deferred=True),
                define("checkpoint_write", CHECKPOINT_WRITE_DESCRIPTION, CheckpointNoteArgs, self._note_handler,
                       permission=Level.ALLOW, deferred=True)]

    def archived_something(self) -> bool:
        """Has compaction taken something out of the view into the archive (a checkpoint, an omission,
        or a tool output it enveloped: its envelope names history_search)?"""
        return self.state.checkpoint is not None or bool(self.state.omissions) or any(
            o.layer == "L2" for o in self.state.overlays.values())

    async def _search_handler(self, ctx: ToolContext, call: ToolCall, args: HistorySearchArgs) -> ToolOutcome:
        return await self.history.search(call.id, args)

    async def _note_handler(self, ctx: ToolContext, call: ToolCall, args: CheckpointNoteArgs) -> ToolOutcome:
        return self.checkpoint_write(call.id, args)

    def checkpoint_write(self, call_id: str, args: CheckpointNoteArgs) -> ToolOutcome:
        note = args.note.strip()
        if not note:
            return ToolOutcome(call_id, "checkpoint_write", False, "invalid_arguments: send {\"note\": \"...\"}",
                               error_code=ErrorCode.INVALID_ARGUMENTS, error_message="note is empty")
        self.note = _one_line(note, self.settings.working_memory_note_chars)
        return ToolOutcome(call_id, "checkpoint_write", True, f"noted: {self.note}")

    def history_search(self, call_id: str, args: HistorySearchArgs) -> ToolOutcome:
        """history_search over the local archive (the tool asks the memory service first: ``history``)."""
        return local_search(self.transcripts, self.session_id, call_id, args)


def pinned_index(messages: list[Message], request: str) -> int:
    """Index of the current request in the record (the newest user message saying exactly it)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "user" and m.get("content") == request:
            return i
    return -1


def fixed_tokens(instructions: str, tools: list[dict[str, Any]], tail_bytes: int) -> int:
    """Tokens of a request outside its history."""
    return tokens_of_bytes(len(instructions.encode()) + tools_bytes(tools) + tail_bytes + 200)


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    for end in (". ", "! ", "? "):
        if end in text:
            return text.split(end, 1)[0] + end.strip()
    return text


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
