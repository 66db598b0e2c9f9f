"""The loop's seams: plain dataclasses and Protocols the pipeline depends on.

The pipeline never sees protobuf or the openai package: the model engine
(services/loop/model), the tool/memory/MCP gRPC adapters and the policies all
meet the orchestrator here. Messages are Chat Completions dicts
(``{"role": ..., "content": ..., "tool_calls": [...], "tool_call_id": ...}``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from services.kernel.elicit import ElicitAsk, ElicitReply
from services.kernel.netgrants import SessionGrants
from services.kernel.tool_args import check_json, parse_args
from services.loop.core.acceptance import AcceptanceItem
from services.loop.core.approvals import Pending
from services.loop.core.domain import (
    McpCatalog,
    MemorySearchResult,
    Message,
    StepResult,
    ToolCall,
    ToolChunkEvent,
    ToolOutcome,
    Usage,
)
from services.loop.core.egress import EgressAsker
from services.loop.core.errors import ModelError
from services.loop.core.turn_events import EventBody
from services.loop.policy.permissions import Level, Verdict
from services.loop.policy.settings import LoopSettings

__all__ = [
    "AcceptanceSource",
    "ContextWindow",
    "ElicitAsker",
    "McpCatalog",
    "McpClient",
    "MemoryClient",
    "MemorySearchResult",
    "Message",
    "ModelClient",
    "ModelError",
    "StepResult",
    "ToolCall",
    "ToolChunkEvent",
    "ToolContext",
    "ToolDef",
    "ToolHandler",
    "ToolIndex",
    "ToolOutcome",
    "ToolRunner",
    "TurnContext",
    "TurnHooks",
    "Usage",
]


class ModelClient(Protocol):
    """One streamed Chat Completions step (services/loop/model implements it)."""

    model_name: str

    async def step(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: Callable[[str], None],
        on_reasoning: Callable[[str], None],
        timeout_seconds: float,
        on_reset: Callable[[], None] | None = None,
        on_retry: Callable[[str], None] | None = None,
    ) -> StepResult:
        """Raises ModelError when the step cannot complete.

        ``on_reset`` (optional): called when a stream dropped after deltas were
        delivered and the step is being retried; the caller discards the partial
        text it showed. Without it such a drop fails the step instead.
        ``on_retry`` (optional): told, in one sentence, of every other retry (an attempt
        that failed before it streamed anything), so the wait is not silent.
        """
        ...


class ToolRunner(Protocol):
    """Runs workspace tools (the tools service adapter implements it)."""

    async def open_session(self, session_id: str, workspace: str, secret_env_names: list[str]) -> list[str]:
        """Returns warnings (e.g. sandbox disabled)."""
        ...

    async def close_session(self, session_id: str) -> None: ...

    async def list_tools(self, session_id: str) -> list[ToolDef]:
        """The service's tools (``handler`` None: the loop sends their calls to ``call``)."""
        ...

    def call(
        self, session_id: str, call_id: str, tool: str, arguments_json: str, timeout_seconds: float,
        on_egress: EgressAsker | None = None,
    ) -> AsyncIterator[ToolChunkEvent | ToolOutcome]:
        """Chunks, then exactly one ToolOutcome. ``tool_service_unavailable`` when down.
        ``on_egress`` answers a sandboxed command's connections to hosts the allow-list does not
        name (services/loop/core/egress.py); None: they are refused at once."""
        ...

    async def session_egress(self, session_id: str, allow: str = "", revoke: str = "") -> SessionGrants:
        """The session's standing network grants and recent refusals, after granting ``allow`` or
        revoking ``revoke`` ("host" or "host:port"); only the user's /network calls it. Raises
        when the service is not reachable."""
        ...

    async def dry_run(self, session_id: str, call_id: str, tool: str, arguments_json: str,
                      timeout_seconds: float) -> ToolOutcome:
        """Preview a write or edit without running it: ok with the real unified diff against the
        file in ``output``, or the error the call would meet (``edit_no_match``, ``stale_read``...).
        Raises TimeoutError when no answer came within ``timeout_seconds``, another exception when the
        service is not reachable."""
        ...


@dataclass(frozen=True)
class ArchivedRecord:
    """One message compaction archived: its index in the session's record, role and text."""

    index: int
    role: str
    text: str


class MemoryClient(Protocol):
    """The memory service as the loop uses it.

    ``search`` and ``write`` take the model's arguments as sent; invalid ones raise
    ``ValueError`` with a sentence that says what to send instead.
    """

    def warm(self) -> None:
        """Start the service now, without waiting, if it runs on demand and is not running (a session
        that will use it opened). Every call waits for such a start (up to
        ``services.kernel.on_demand.START_WAIT_SECONDS``) before its own timeout counts."""
        ...

    async def search(self, workspace: str, args: dict[str, Any], timeout_seconds: float) -> MemorySearchResult: ...

    async def write(self, workspace: str, args: dict[str, Any], timeout_seconds: float) -> str: ...

    async def constraints(self, workspace: str, max_chars: int, timeout_seconds: float) -> str: ...

    async def existing_notes(self, workspace: str, limit: int, timeout_seconds: float) -> list[tuple[str, str]]:
        """``(id, text)`` of recent notes, for the harvest extractor to update instead of duplicate."""
        ...

    async def reconcile(self, workspace: str, candidates: list[dict[str, Any]], timeout_seconds: float) -> int:
        """Send harvested candidates (NoteCandidate fields by name); returns how many were applied."""
        ...

    async def archive_messages(self, workspace: str, session_id: str, records: list[ArchivedRecord],
                               timeout_seconds: float) -> int:
        """Index messages compaction took out of the view (for history_search); returns how many were new."""
        ...

    async def search_history(self, workspace: str, session_id: str, query: str, k: int,
                             timeout_seconds: float) -> list[ArchivedRecord]:
        """The session's archived messages matching ``query``, best first."""
        ...


ElicitAsker = Callable[[ElicitAsk], Awaitable[ElicitReply]]
"""Puts an MCP server's question to the user (services/mcp_gateway/elicitation.py) and returns the reply."""


class McpClient(Protocol):
    """The MCP gateway as the loop uses it."""

    def for_session(self, session_id: str) -> McpClient:
        """The client one session uses: it also sees the servers added for that session alone."""
        ...

    def wanted(self) -> bool:
        """False when asking would only start a gateway with no server (it runs on demand, is not
        running, and none is configured): the catalog is then empty without asking."""
        ...

    def warm(self) -> None:
        """Start the gateway now, without waiting, when it is :meth:`wanted` and not running."""
        ...

    async def catalog(self, timeout_seconds: float) -> McpCatalog: ...

    async def call(
        self, call_id: str, server: str, tool: str, input_json: str, timeout_seconds: float,
        on_chunk: Callable[[ToolChunkEvent], None], on_elicit: ElicitAsker | None = None,
    ) -> ToolOutcome:
        """One remote call; ``on_elicit`` answers the questions the server asks the user meanwhile
        (none given: they are declined)."""
        ...

    async def resources(self, call_id: str, server: str, uri: str, timeout_seconds: float) -> ToolOutcome:
        """``server``'s resources and templates ("" ``uri``), or one resource's contents."""
        ...

    async def add_project_server(self, entry: dict[str, Any], source: str, timeout_seconds: float) -> str:
        """Start a project's server (from ``source``, its .mcp.json) for the gateway's run; "" when
        added or already there, else why it was refused."""
        ...


# -- tools the loop answers itself (services/loop/tools/registry.py keeps them per session) --


class ToolIndex(Protocol):
    """The session's tools as the turn and the handlers see them (registry.ToolRegistry is one)."""

    def get(self, name: str) -> ToolDef | None: ...

    def names(self) -> list[str]:
        """Tools callable without loading, sorted (for error messages)."""
        ...

    def visible(self) -> list[ToolDef]:
        """What the model is offered this step."""
        ...

    def search(self, query: str, limit: int = 5) -> list[ToolDef]:
        """Deferred tools ranked for ``query``."""
        ...

    def load(self, names: Iterable[str]) -> None:
        """Send these deferred tools to the model from the next step on."""
        ...


class ToolContext(Protocol):
    """What a loop-answered tool's handler may use during one call (dispatch.DispatchContext is one).

    A handler needing more of the session (its task state, plans, checkpoints) is best a bound
    method of the session feature that owns that state (its ``tools()``, services/loop/core/feature.py);
    add a member here only for what every handler may use."""

    @property
    def session_id(self) -> str: ...
    @property
    def workspace(self) -> str: ...
    @property
    def interactive(self) -> bool:
        """Someone can answer approvals and questions."""
        ...
    @property
    def registry(self) -> ToolIndex: ...
    @property
    def pending(self) -> Pending:
        """The turn's open approvals and questions (``open("q")`` asks the user)."""
        ...
    @property
    def memory(self) -> MemoryClient | None: ...
    @property
    def mcp(self) -> McpClient | None: ...
    @property
    def ask_timeout_seconds(self) -> float: ...
    @property
    def emit(self) -> Callable[[EventBody], None]:
        """Report a typed event of this turn (services/loop/core/turn_events.py)."""
        ...
    @property
    def remaining(self) -> Callable[[], float]:
        """Seconds left on the turn clock."""
        ...
    @property
    def on_degraded(self) -> Callable[[str, str], None]:
        """(component, reason): an auxiliary part failed; the turn goes on without it."""
        ...


ToolHandler = Callable[[ToolContext, ToolCall, dict[str, Any]], Awaitable[ToolOutcome]]
"""Runs one call with its parsed arguments. Raise ``ValueError`` for arguments the model must
fix (its text is the result), ``errors.AuxiliaryError`` for a failed auxiliary service; the
dispatcher fills the outcome's call id and tool name."""


@dataclass(frozen=True)
class ToolDef:
    """One tool the model can call: its schema, how the gate treats it, and who runs it.

    To add a tool the loop answers itself, build it with ``tools.args.define`` (its arguments
    dataclass gives the schema and the parse) and return it from a session feature's ``tools()``;
    no other table needs it.
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    permission: Level = Level.WARN
    """The level this tool asks for. A loop tool's ALLOW is taken as is; a remote tool cannot
    declare itself out of WARN (policy/permissions.py decides it by name), only into DENY."""
    parallel_safe: bool = False
    """May run concurrently with neighbouring parallel-safe calls of the same batch."""
    deferred: bool = False
    """Not sent to the model until ``tool_search`` loads it (or the model names it anyway)."""
    handler: ToolHandler | None = field(default=None, compare=False)
    """None: a tools-service tool (``ToolRunner.call`` runs it)."""
    args: type[Any] | None = field(default=None, compare=False)
    """The arguments dataclass ``parameters`` and the handler's parse come from (tools/args.py), if any."""
    refine: Callable[[Any], None] | None = field(default=None, compare=False)
    """A further check of the parsed arguments before anything runs (``mcp_call``: its ``input``
    against the MCP tool's own schema); raises ``ArgumentError``."""

    def check(self, arguments: dict[str, Any]) -> None:
        """Raise ``ArgumentError`` when ``arguments`` do not fit this tool: its arguments dataclass,
        else its JSON schema (a tools-service or MCP tool's own), checked the same way."""
        if self.args is None:
            check_json(self.parameters, arguments)
            return
        parsed = parse_args(self.args, arguments)
        if self.refine is not None:
            self.refine(parsed)

    @property
    def local(self) -> bool:
        """Answered by the loop itself."""
        return self.handler is not None

    @cached_property
    def spec(self) -> dict[str, Any]:
        """The Chat Completions tool dict the model is sent."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


# -- the turn and its session (pipeline.Turn <- runtime.SessionRuntime) --


class WindowFillView(Protocol):
    """How full the model's window is (tokens)."""

    @property
    def used(self) -> int: ...
    @property
    def ceiling(self) -> int: ...
    @property
    def window(self) -> int: ...


class ContextWindow(Protocol):
    """The session's context keeper as the turn uses it (compaction.keeper.ContextKeeper is one).

    Before each model step the turn calls ``prepare`` (compaction runs there when the request would
    reach the ceiling) and sends ``request_history``; it reports the provider's count (``observe``)
    and the turn's end (``end_turn``)."""

    @property
    def enabled(self) -> bool:
        """Compaction may run (a ``context_length`` refusal is retried compacting harder only then)."""
        ...

    def fixed_tokens(self, instructions: str, tools: list[dict[str, Any]], tail_bytes: int) -> int:
        """Tokens of a request outside its history (instructions, tool schemas, tail blocks)."""
        ...

    async def prepare(self, messages: list[Message], fixed_tokens: int, request: str, model: ModelClient,
                      emit: Callable[[EventBody], None], save: Callable[[], None], *, force: bool = False,
                      hard: bool = False) -> bool: ...

    def request_history(self, messages: list[Message]) -> tuple[list[Message], int]:
        """The history the next request sends (compacted view) and its approximate bytes."""
        ...

    def fill(self) -> WindowFillView: ...

    def observe(self, prompt_tokens: int) -> None: ...

    def tail_part(self) -> dict[str, str]: ...

    def end_turn(self, number: int, status: str, request: str, answer: str, changed: list[str]) -> None: ...


class TurnHooks(Protocol):
    """The session's hooks at the turn's points (hooks.engine.HookEngine is one; no hooks: all pass)."""

    async def turn_start(self, turn: int, text: str, emit: Callable[[EventBody], None]) -> None: ...

    async def step_before(self, turn: int, step: int, emit: Callable[[EventBody], None]) -> str:
        """Runs step.before; returns the ``hook-context`` tail block body for this step's request."""
        ...

    async def tool_before(self, call: ToolCall, arguments: dict[str, Any], emit: Callable[[EventBody], None]
                          ) -> ToolCall | ToolOutcome:
        """The call to run (its arguments maybe rewritten: the gate then checks those), or its refusal."""
        ...

    async def tool_after(self, call: ToolCall, outcome: ToolOutcome, emit: Callable[[EventBody], None]) -> None: ...

    async def turn_end(self, turn: int, status: str, text: str, emit: Callable[[EventBody], None]) -> None: ...

    async def stop_blocked(self, turn: int, reason: str, emit: Callable[[EventBody], None]) -> None:
        """The acceptance gate refused the model's stop (observe only)."""
        ...

    def scoped(self) -> TurnHooks:
        """These hooks for a child session: the same entries, injected context of its own."""
        ...


class AcceptanceSource(Protocol):
    """The acceptance items a turn must prove when the model stops (plans.acceptance.AcceptanceBook
    is one; a plan step's host gives its item's ``verify``)."""

    def items(self) -> list[AcceptanceItem]: ...

    def record(self, verdicts: Mapping[str, bool]) -> None:
        """Keep each checked item's last verdict (by item id)."""
        ...


@dataclass(frozen=True)
class TurnContext:
    """Everything a ``pipeline.Turn`` reads and calls of its session, as one value.

    The session runtime builds one per turn; a plan step and a subagent child are the parent's
    context with a few fields replaced (``dataclasses.replace``), not hosts of their own. The turn
    never reaches past it, and the pipeline does not import the runtime. What may change while a
    turn runs (the system message once the MCP catalog arrives, whether a client can answer) is
    read through a function."""

    session_id: str
    workspace: str
    settings: LoopSettings
    model: ModelClient
    messages: list[Message]
    """The session's record; the turn appends to it."""
    instructions: Callable[[], str]
    tools: ToolIndex
    runner: ToolRunner
    memory: MemoryClient | None
    mcp: McpClient | None
    interactive: Callable[[], bool]
    allowed_tools: list[str]
    """The session's "allow always" grants (an approval may add one)."""
    context: ContextWindow
    hooks: TurnHooks
    acceptance: AcceptanceSource
    """What the acceptance gate checks when the model stops (no items: no gate)."""
    emit: Callable[[int, EventBody], None]
    gate: Callable[[ToolDef, dict[str, Any]], Verdict]
    """The permission gate for one call."""
    turn_tail: Callable[[Callable[[EventBody], None]], Awaitable[dict[str, str]]]
    """Before the first step: get the session ready (tools attached, degraded parts reported)
    and the tail blocks that hold for the whole turn (memory constraints)."""
    step_tail: Callable[[Callable[[EventBody], None]], Awaitable[dict[str, str]]]
    """Tail blocks fetched every step (the task state, the features' parts)."""
    open_tasks: Callable[[], list[str]]
    """Contents of the todo items still open."""
    add_usage: Callable[[Usage], None]
    save: Callable[[], None]
    """Persist the record (a failing disk degrades, never raises)."""
    end_of_turn: Callable[[], None]
    """After the clients had turn_finished: fold the journal, close the trace."""
    editor_buffers: Callable[[], bool] = lambda: False
    """An editor client follows the session and answers BufferRequested (the read tool shows unsaved
    buffers)."""


def nothing() -> None:
    """A ``save`` / ``end_of_turn`` for a turn without a session file of its own (a step, a child)."""
