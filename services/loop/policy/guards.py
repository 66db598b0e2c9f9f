"""Runtime guards: is this call still sensible right now? (the gate asks "is it dangerous?").

- ``DuplicateCallGuard``: the same tool with the same canonical arguments is
  refused on the (threshold + 1)-th call, naming the earlier call id.
- ``StrategyGate``: a streak of steps whose calls all failed earns one
  ``[strategy-gate]`` nudge; ``stall_iterations`` steps that tried tools with
  not one success in the turn mean it should finish early. ``cancelled_by_user``
  is not a failure.
- ``check_bash_policy``: operator deny / confirm patterns from config.
- ``path_escapes``: absolute paths outside the workspace named by a bash
  command (recorded by default, refused with ``strict_paths``).
- ``gate_for_bash``: the permission a bash command gets; one that writes files
  is treated as an edit.

A guard that raises is a refusal (fail closed); the pipeline still writes the
paired tool message.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from services.kernel.command_policy import TooComplex, command_parts
from services.kernel.errors import ConfigError
from services.loop.policy.codes import ErrorCode
from services.loop.policy.settings import BashPolicy

# Calls that change the world: after one succeeds, earlier identical reads may
# legitimately return something new, so their duplicate counts are forgotten.
ACTION_TOOLS = frozenset({"write", "edit", "bash", "mcp_call", "subAgent"})
CANCELLED = "cancelled_by_user"


def canonical_call(tool: str, arguments: Mapping[str, Any]) -> str:
    """One string per (tool, arguments), independent of key order and spacing."""
    return tool + "\x00" + json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Refusal:
    """A guard's refusal: a stable code and a sentence the model can act on."""

    code: ErrorCode
    message: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class DuplicateCallGuard:
    """Counts identical calls within a turn (state: canonical key -> call ids)."""

    threshold: int = 2
    seen: dict[str, list[str]] = field(default_factory=dict)

    def check(self, tool: str, arguments: Mapping[str, Any], call_id: str) -> Refusal | None:
        """Record the call; refuse it when identical calls already reached the threshold."""
        if self.threshold <= 0:
            return None
        key = canonical_call(tool, arguments)
        earlier = self.seen.setdefault(key, [])
        if len(earlier) >= self.threshold:
            last = earlier[-1]
            return Refusal(
                ErrorCode.DUPLICATE_CALL,
                f"This exact {tool} call already ran {len(earlier)} times (last as {last}); its result is in "
                f"that tool message. Use it, or change the arguments or the approach.",
                {"earlier_call_id": last, "count": len(earlier) + 1},
            )
        earlier.append(call_id)
        return None

    def record_success(self, tool: str, arguments: Mapping[str, Any]) -> None:
        """A successful action call makes earlier observations stale: forget all other keys."""
        if tool in ACTION_TOOLS:
            key = canonical_call(tool, arguments)
            self.seen = {key: self.seen[key]} if key in self.seen else {}


def strategy_nudge(streak: int) -> str:
    """The `[strategy-gate]` message."""
    return (
        f"[strategy-gate] Your tool calls have all failed for {streak} steps in a row. Stop repeating the "
        "approach: read the error messages, try a different tool or method, or ask the user with ask_user."
    )


@dataclass
class StrategyGate:
    """Failure streaks of one turn (state holder over per-step outcomes)."""

    failed_streak_threshold: int = 2
    max_nudges: int = 3
    stall_iterations: int = 3
    failed_streak: int = 0
    attempted_steps: int = 0
    successes: int = 0
    nudges: int = 0

    def observe_step(self, outcomes: Iterable[tuple[bool, str]]) -> str | None:
        """Take one step's (ok, error_code) results; return a nudge when one is due."""
        counted = [ok for ok, code in outcomes if code != CANCELLED]
        if not counted:
            return None  # text-only steps and fully cancelled batches say nothing about strategy
        self.attempted_steps += 1
        if any(counted):
            self.failed_streak = 0
            self.successes += sum(counted)
            return None
        self.failed_streak += 1
        if self.failed_streak >= self.failed_streak_threshold > 0 and self.nudges < self.max_nudges:
            streak, self.failed_streak = self.failed_streak, 0
            self.nudges += 1
            return strategy_nudge(streak)
        return None

    @property
    def stalled(self) -> bool:
        """True when ``stall_iterations`` steps tried tools and not one call of the turn succeeded.

        Zero progress, not a bad patch: a turn that got somewhere and then hits a
        failure streak gets `[strategy-gate]` nudges instead of an early finish.
        """
        return self.stall_iterations > 0 and self.attempted_steps >= self.stall_iterations and self.successes == 0


# ------------------------------------------------------------------ bash


@dataclass(frozen=True)
class CompiledBashPolicy:
    """BashPolicy with its patterns compiled."""

    deny: tuple[re.Pattern[str], ...] = ()
    confirm: tuple[re.Pattern[str], ...] = ()


def compile_bash_policy(policy: BashPolicy) -> CompiledBashPolicy:
    """Compile the patterns; an invalid one is a ConfigError naming it."""

    def build(patterns: list[str], key: str) -> tuple[re.Pattern[str], ...]:
        out = []
        for pattern in patterns:
            try:
                out.append(re.compile(str(pattern)))
            except re.error as exc:
                raise ConfigError(
                    f"config key `ai.bash_policy.{key}` has an invalid pattern {pattern!r}: {exc}",
                    hint="Patterns are Python regular expressions.",
                ) from None
        return tuple(out)

    return CompiledBashPolicy(build(policy.deny, "deny"), build(policy.confirm, "confirm"))


def check_bash_policy(command: str, policy: CompiledBashPolicy) -> tuple[str, str]:
    """("deny" | "confirm" | "", the matching pattern) for ``command``."""
    for pattern in policy.deny:
        if pattern.search(command):
            return "deny", pattern.pattern
    for pattern in policy.confirm:
        if pattern.search(command):
            return "confirm", pattern.pattern
    return "", ""


# Places outside the workspace a command may name without escaping it: the
# sandbox mounts them read-only or private (/tmp), so naming them is routine.
SYSTEM_PREFIXES = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/etc/", "/opt/", "/tmp/", "/proc/self/")
SYSTEM_PATHS = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero",
                          "/dev/urandom", "/dev/random", "/tmp", "/"})


def _candidate_paths(command: str) -> list[str]:
    words: list[str] = []
    try:
        parts = command_parts(command)
    except (RecursionError, TooComplex):
        return []  # cannot be parsed: the gate refuses it and says why
    for part in parts:
        words.extend(part.argv)
        words.extend(r.target for r in part.redirects)
    out = []
    for word in words:
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if value.startswith("/"):
            out.append(value)
    return out


def path_escapes(command: str, workspace: str) -> list[str]:
    """Absolute paths in ``command`` that lie outside ``workspace`` (system paths excepted)."""
    root = posixpath.normpath(workspace)
    found: list[str] = []
    for raw in _candidate_paths(command):
        path = posixpath.normpath(raw)
        if path == root or path.startswith(root.rstrip("/") + "/"):
            continue
        if path in SYSTEM_PATHS or (path + "/").startswith(SYSTEM_PREFIXES):
            continue
        if path not in found:
            found.append(path)
    return found


def check_path_escape(command: str, workspace: str, strict: bool) -> tuple[list[str], Refusal | None]:
    """The escaping paths (always, for the trace) and a refusal when ``strict``."""
    escaped = path_escapes(command, workspace)
    if not escaped or not strict:
        return escaped, None
    return escaped, Refusal(
        ErrorCode.PATH_OUTSIDE_WORKSPACE,
        f"This command names paths outside the workspace ({', '.join(escaped[:3])}) and strict_paths is on. "
        "Work inside the workspace or use relative paths.",
        {"paths": escaped},
    )


def gate_for_bash(command: str) -> str:
    """The permission of a bash command: "deny" (hard list), "edit" (writes files) or "bash"."""
    from services.kernel.command_policy import denied_reason, writes_files

    if denied_reason(command):
        return "deny"
    return "edit" if writes_files(command) else "bash"
