"""The search-stall ladder: notice a turn that keeps looking and never acts.

Two measures, both computed from tool names, success and normalized evidence
(never from raw output bytes, which lie both ways: an empty grep and an empty
glob print the same text, glob orders by mtime, search tools echo the query):

- ``search_streak``: successful read-only calls in a row. A successful action
  (write/edit/bash/mcp_call/subAgent) or a user message resets it; failed
  searches do not count (the strategy gate owns failures); todo_write,
  checkpoint_write and ask_user change nothing, or one todo update would hide
  a stall.
- evidence fingerprints: each search result becomes evidence keys (always
  prefixed by the tool name). All keys already seen -> ``stale_streak`` + 1;
  any new key -> ``stale_streak`` = 0 and ``novel`` grows. The seen set is capped
  at 4096 keys and cleared (not evicted) when full: at most one false
  "novel", never a false "stale".

Levels (defaults in ``LoopSettings``): L1 at streak 4 or stale 3, L2 at streak 6
or stale 4 (L2 stays two steps before the default 10-iteration budget ends so
its text is read), L3 at ``search_streak_l3`` (0 = off) or stale 6 with two
non-empty repeats: the turn finishes with reason "search unconverged". The same
level speaks again only after another L1-threshold's worth of searches.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SEARCH_TOOLS = frozenset({"read", "grep", "glob", "history_search", "memory_search", "websearch", "webfetch",
                          "job_output", "job_list"})
ACTION_TOOLS = frozenset({"write", "edit", "bash", "mcp_call", "subAgent"})
NEUTRAL_EVIDENCE = frozenset({"memory_search", "history_search", "websearch"})
SEEN_CAP = 4096

_GREP_HIT = re.compile(r"^(.+?):(\d+):", re.MULTILINE)


@dataclass(frozen=True)
class LadderLimits:
    """Thresholds of the ladder (``search_streak_threshold`` 0 = ladder off)."""

    search_streak_threshold: int = 4
    search_streak_l2: int = 6
    search_streak_l3: int = 0
    stale_streak_l1: int = 3
    stale_streak_l2: int = 4
    stale_streak_l3: int = 6
    repeated_nonempty_l3: int = 2


@dataclass(frozen=True)
class SearchStalled:
    """One ladder signal (becomes a SearchStalled event and, below L3, a `[search-gate]` nudge)."""

    iteration: int
    level: int
    calls: int
    streak: int
    stale_streak: int
    novel: int
    repeated: int
    unconverged: bool
    reason: str


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


def evidence_keys(
    tool: str, arguments: Mapping[str, Any], output: str, data: Mapping[str, Any] | None = None
) -> tuple[list[str], bool] | None:
    """(keys, empty) for one successful search result; None when the tool's output is neutral."""
    if tool in NEUTRAL_EVIDENCE or tool not in SEARCH_TOOLS:
        return None
    target = str(arguments.get("path") or arguments.get("url") or arguments.get("job_id") or arguments.get("id") or ".")
    if tool == "grep":
        hits = sorted({f"{m.group(1)}:{m.group(2)}" for m in _GREP_HIT.finditer(output)})
        if not hits:
            return [f"grep:nomatch@{target}"], True
        return [f"grep:{h}" for h in hits], False
    if tool == "glob":
        paths = data.get("paths") if data else None
        if not isinstance(paths, list):
            paths = [ln for ln in output.splitlines() if ln and not ln.startswith(("[", "No files match"))]
        if not paths:
            return [f"glob:nomatch@{target}"], True
        return ["glob:" + _digest("\n".join(sorted(str(p) for p in paths)))], False
    if not output.strip():
        return [f"{tool}:empty@{target}"], True
    return [f"{tool}:{_digest(output)}"], False


@dataclass
class SearchLadder:
    """Ladder state for one turn (not persisted)."""

    limits: LadderLimits = field(default_factory=LadderLimits)
    streak: int = 0
    stale_streak: int = 0
    novel: int = 0
    repeated_nonempty: int = 0
    calls: int = 0
    seen: set[str] = field(default_factory=set)
    last_level: int = 0
    calls_since_signal: int = 0

    def _reset(self) -> None:
        self.streak = self.stale_streak = self.repeated_nonempty = 0
        self.last_level = self.calls_since_signal = 0
        self.seen.clear()

    def user_message(self) -> None:
        """The user spoke: the world may have changed."""
        self._reset()

    def observe(
        self,
        tool: str,
        ok: bool,
        arguments: Mapping[str, Any] | None = None,
        output: str = "",
        data: Mapping[str, Any] | None = None,
    ) -> None:
        """Take one finished tool call."""
        if not ok:
            return
        if tool in ACTION_TOOLS:
            self._reset()
            return
        if tool not in SEARCH_TOOLS:
            return
        self.streak += 1
        self.calls += 1
        self.calls_since_signal += 1
        found = evidence_keys(tool, arguments or {}, output, data)
        if found is None:
            return
        keys, empty = found
        new = [k for k in keys if k not in self.seen]
        if new:
            if len(self.seen) + len(new) > SEEN_CAP:
                self.seen.clear()
            self.seen.update(new)
            self.novel += len(new)
            self.stale_streak = 0
            self.repeated_nonempty = 0
        else:
            self.stale_streak += 1
            if not empty:
                self.repeated_nonempty += 1

    def level(self) -> tuple[int, str]:
        """The ladder level reached now (0 = none) and why."""
        lim = self.limits
        if lim.search_streak_threshold <= 0:
            return 0, ""
        if lim.search_streak_l3 > 0 and self.streak >= lim.search_streak_l3:
            return 3, f"{self.streak} searches in a row"
        if self.stale_streak >= lim.stale_streak_l3 and self.repeated_nonempty >= lim.repeated_nonempty_l3:
            return 3, f"no new evidence in {self.stale_streak} searches"
        if self.streak >= lim.search_streak_l2 or self.stale_streak >= lim.stale_streak_l2:
            return 2, self._why(lim.search_streak_l2, lim.stale_streak_l2)
        if self.streak >= lim.search_streak_threshold or self.stale_streak >= lim.stale_streak_l1:
            return 1, self._why(lim.search_streak_threshold, lim.stale_streak_l1)
        return 0, ""

    def _why(self, streak_limit: int, stale_limit: int) -> str:
        if self.stale_streak >= stale_limit:
            return f"no new evidence in {self.stale_streak} searches"
        return f"{self.streak} searches in a row without an edit or command"

    def check(self, iteration: int, *, readonly_posture: bool = False) -> SearchStalled | None:
        """After a step: a signal when a level is newly reached (or re-reached after a full L1 span)."""
        if readonly_posture:
            return None
        level, reason = self.level()
        if level == 0:
            return None
        repeat_span = self.limits.search_streak_threshold
        if level < self.last_level or (level == self.last_level and self.calls_since_signal < repeat_span):
            return None
        self.last_level = level
        self.calls_since_signal = 0
        return SearchStalled(
            iteration=iteration,
            level=level,
            calls=self.calls,
            streak=self.streak,
            stale_streak=self.stale_streak,
            novel=self.novel,
            repeated=self.repeated_nonempty,
            unconverged=level == 3,
            reason="search unconverged" if level == 3 else reason,
        )


def search_gate_message(signal: SearchStalled, static_check: str = "", commands: tuple[str, ...] = ()) -> str:
    """The `[search-gate]` nudge for L1/L2 (L3 finishes the turn instead)."""
    if signal.level == 1:
        return (
            f"[search-gate] {signal.reason}. Change tactic: try another symbol name or scope, read the entry "
            "point, or act on what you already know (edit, run the tests)."
        )
    check = (
        f"\nStatic check output:\n{static_check}"
        if static_check
        else (f"\nRun the static check yourself: {'; '.join(commands)}" if commands else "")
    )
    return (
        f"[search-gate] {signal.reason}. Stop guessing keywords. Decide from the evidence you have: make the "
        f"change, run a check, or ask the user.{check}"
    )
