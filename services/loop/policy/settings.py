"""``LoopSettings``: the ``ai:`` config section, one documented field each."""

from __future__ import annotations

from dataclasses import dataclass, field

from services.kernel.config import Config

# Events kept per session for late re-attaches (core.events.EventLog; config key loop.event_window).
# A turn of a busy session emits a few thousand events (mostly text deltas);
# the window keeps several turns so a late re-attach is still served, while 50
# open sessions stay within ~200 MB even with full windows (~200 B per event).
DEFAULT_WINDOW = 20_000


@dataclass
class BashPolicy:
    """Operator additions to the built-in bash rules (regular expressions, searched in the command)."""

    deny: list[str] = field(default_factory=list)
    """Patterns refused outright, on top of the hard DENY list. Default: none."""
    confirm: list[str] = field(default_factory=list)
    """Patterns that always ask for approval, even after "allow always". Default: none."""


@dataclass
class StaticCheck:
    """Linters the harness may run for the L2 search-gate (user layer only; see policy/static_check.py)."""

    commands: list[str] = field(default_factory=lambda: ["ruff check ."])
    """argv-style commands (no shell); run only with AI_CODING_STATIC_CHECK=1 and an allow-listed program."""


@dataclass
class LoopSettings:
    """How a turn runs and when it stops (config section ``ai``)."""

    max_tool_iterations: int = 50
    """Model steps per round before the turn stops as max_iterations (or auto-continues).

    50, not 10: an ordinary change across a few files (read them, edit each, run the tests, fix,
    rerun) takes 15-40 steps, and 10 stopped such tasks half done (exit 6). Codex CLI and Claude
    Code have no per-turn step cap at all. Loops are not what this number is for: the duplicate
    call guard, the strategy gate (steps whose calls all fail) and the search ladder stop a turn
    that makes no progress within a few steps; this is only the backstop."""
    max_auto_continuations: int = 3
    """Extra rounds granted with a `[continue]` nudge while the todo list has open items; 0 = off."""
    turn_timeout_seconds: float = 1800.0
    """Wall clock of one turn, approval waits included; 0 = no limit. On expiry: status timeout.

    30 minutes, not 10: 50 steps at the 5-20 s a real model step takes, plus test runs (bash allows
    up to 600 s per call), do not fit in 600 s; a stuck turn is still cut, and --timeout shortens it."""
    turn_token_budget: int = 0
    """Tokens (prompt + completion, summed over steps) one turn may use; 0 = no budget. Terminal."""
    subagent_timeout_seconds: float = 600.0
    """Wall clock of one subagent child (a foreground child also ends before its parent's clock); 0 = none."""
    subagent_max_iterations: int = 30
    """Model steps one subagent child may take before it ends as max_iterations."""
    subagent_token_budget: int = 0
    """Tokens one subagent child may use; 0 = no budget."""
    max_parallel_subagents: int = 4
    """Subagent children running at once per session; one more is refused at once (never queued)."""
    subagent_isolation: bool = True
    """A child that may write works in a temporary git worktree (in a git repository), applied on request."""
    failed_streak_threshold: int = 2
    """Consecutive steps whose tool calls all failed before one `[strategy-gate]` nudge."""
    max_strategy_nudges: int = 3
    """`[strategy-gate]` nudges per turn at most."""
    stall_iterations: int = 3
    """Consecutive steps that attempted tool calls with zero successes before an early finish."""
    duplicate_call_threshold: int = 2
    """Identical (tool, arguments) calls allowed; the next one is refused. 0 = guard off."""
    search_streak_threshold: int = 4
    """Search ladder L1: successful read-only calls in a row before a `[search-gate]` nudge; 0 = ladder off."""
    search_streak_l2: int = 6
    """Search ladder L2 streak (second, sharper nudge). Kept below max_tool_iterations - 2 so it is read."""
    search_streak_l3: int = 0
    """Search ladder L3 streak that forces a finish; 0 = off (only the evidence rule can force it)."""
    stale_streak_l1: int = 3
    """Evidence already seen this many times in a row triggers L1."""
    stale_streak_l2: int = 4
    """Evidence already seen this many times in a row triggers L2."""
    stale_streak_l3: int = 6
    """Stale evidence streak that, with repeated_nonempty_l3 repeats, forces a finish ("search unconverged")."""
    repeated_nonempty_l3: int = 2
    """Repeats of non-empty evidence required, with stale_streak_l3, for L3."""
    strict_paths: bool = False
    """Refuse bash commands naming absolute paths outside the workspace (default: only record them)."""
    enforce_dependencies: bool = True
    """todo_write refuses unknown or self dependencies and starting an item whose dependencies are open."""
    question_timeout_seconds: float = 300.0
    """How long ask_user waits for an answer before returning `no_answer`."""
    plan_max_step_turns: int = 0
    """Step turns one /plan run may take in all (repairs inside a step included); 0 = no cap. When
    reached, the items not yet run stay open (and the run ends plan_incomplete)."""
    plan_item_wall_seconds: float = 900.0
    """Wall clock one plan item's attempts share (its step turn and the repair in it); 0 = the turn clock."""
    bash_policy: BashPolicy = field(default_factory=BashPolicy)
    """Operator deny / confirm patterns for bash."""
    static_check: StaticCheck = field(default_factory=StaticCheck)
    """The L2 static check's commands (an execution key: a project cannot set it)."""


def loop_settings(config: Config) -> LoopSettings:
    """The typed ``ai`` section; a wrong type is a ConfigError naming the key."""
    return config.section(LoopSettings, "ai")
