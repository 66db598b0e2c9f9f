"""The ``hooks:`` config section: points, capabilities, and two entry formats, checked at load.

Our format lists entries under ``hooks.events``::

    hooks:
      plugin_dir: ~/.ai-coding-hooks       # python hooks' modules (default <workspace>/.ai-coding/hooks)
      events:
        - name: no-rm
          point: tool.before               # where it runs (POINTS)
          capabilities: [block]            # what it may do (default [observe]); checked against MATRIX
          matcher: bash                    # tool-name regex (tool.before / tool.after only)
          kind: command                    # or python (module: NAME, function: NAME)
          command: python3 ~/hooks/no_rm.py
          timeout_seconds: 10
          raw: false                       # true: stdin carries values unredacted

Claude Code's format (``PreToolUse`` / ``PostToolUse`` / ``UserPromptSubmit`` / ``Stop`` /
``SessionStart`` with ``matcher`` and ``hooks: [{type: command, command, timeout}]``) is
accepted next to it and mapped onto our points (docs/hooks.md says how, and what is not
supported). Asking a point for a capability it lacks is a ConfigError naming the entry.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from services.kernel.errors import ConfigError


class Capability(StrEnum):
    OBSERVE = "observe"
    INJECT = "inject"
    BLOCK = "block"
    REWRITE = "rewrite"


class HookPoint(StrEnum):
    """Where in a turn (or beside it) a hook runs."""

    TURN_START = "turn.start"
    STEP_BEFORE = "step.before"
    TOOL_BEFORE = "tool.before"
    TOOL_AFTER = "tool.after"
    COMPACT_BEFORE = "compact.before"
    COMPACT_AFTER = "compact.after"
    MEMORY_HARVEST = "memory.harvest"
    SUBAGENT_START = "subagent.start"
    SUBAGENT_END = "subagent.end"
    TURN_END = "turn.end"
    STOP_BLOCKED = "stop.blocked"


class HookKind(StrEnum):
    """How a hook runs: a command line, or a function of a module in ``plugin_dir``."""

    COMMAND = "command"
    PYTHON = "python"


FAIL_CLOSED = frozenset({Capability.BLOCK, Capability.REWRITE})
"""A hook with one of these refuses the call when it fails (times out, crashes, answers garbage)."""

_O, _I, _B, _R = Capability.OBSERVE, Capability.INJECT, Capability.BLOCK, Capability.REWRITE
MATRIX: dict[HookPoint, frozenset[Capability]] = {
    HookPoint.TURN_START: frozenset({_O, _I}),
    HookPoint.STEP_BEFORE: frozenset({_O, _I}),
    HookPoint.TOOL_BEFORE: frozenset({_O, _I, _B, _R}),
    HookPoint.TOOL_AFTER: frozenset({_O, _I}),
    HookPoint.COMPACT_BEFORE: frozenset({_O}),
    HookPoint.COMPACT_AFTER: frozenset({_O}),
    HookPoint.MEMORY_HARVEST: frozenset({_O}),
    HookPoint.SUBAGENT_START: frozenset({_O}),
    HookPoint.SUBAGENT_END: frozenset({_O}),
    HookPoint.TURN_END: frozenset({_O}),
    HookPoint.STOP_BLOCKED: frozenset({_O}),
}
"""Each point and what a hook there may do: ``tool.before`` is the only one that may block or rewrite."""
POINTS = tuple(MATRIX)
TOOL_POINTS = frozenset({HookPoint.TOOL_BEFORE, HookPoint.TOOL_AFTER})

DEFAULT_TIMEOUT_S = 30.0
CLAUDE_DEFAULT_TIMEOUT_S = 60.0  # Claude Code's own default

# Claude Code event -> (our point, capabilities). SessionStart runs at the first turn.start of a
# session opened in this loop process.
CLAUDE_EVENTS: dict[str, tuple[HookPoint, frozenset[Capability]]] = {
    "PreToolUse": (HookPoint.TOOL_BEFORE, frozenset({_O, _I, _B, _R})),
    "PostToolUse": (HookPoint.TOOL_AFTER, frozenset({_O, _I})),
    "UserPromptSubmit": (HookPoint.TURN_START, frozenset({_O, _I})),
    "SessionStart": (HookPoint.TURN_START, frozenset({_O, _I})),
    "Stop": (HookPoint.TURN_END, frozenset({_O})),
}
# The config loader normalizes keys to snake_case; accept both spellings.
_CLAUDE_BY_KEY = {re.sub(r"(?<=[a-z])([A-Z])", r"_\1", name).lower(): name for name in CLAUDE_EVENTS}
_CLAUDE_BY_KEY.update({name: name for name in CLAUDE_EVENTS})
CLAUDE_UNSUPPORTED = ("Notification", "SubagentStop", "PreCompact", "SessionEnd")


@dataclass(frozen=True)
class HookSpec:
    """One configured hook."""

    name: str
    point: HookPoint
    kind: HookKind
    capabilities: frozenset[Capability]
    argv: tuple[str, ...] = ()
    """The command (a string entry runs through ``/bin/sh -c``)."""
    module: str = ""
    function: str = "hook"
    matcher: str = ""
    """A regex the tool's name must match in full (tool points only); empty: every tool."""
    timeout_seconds: float = DEFAULT_TIMEOUT_S
    raw: bool = False
    env: tuple[tuple[str, str], ...] = ()
    """Extra environment variables the user set for this hook."""
    claude_event: str = ""
    """Set for an entry in Claude Code's format: its event name (stdin and stdout follow that format)."""

    @property
    def fails_closed(self) -> bool:
        return bool(self.capabilities & FAIL_CLOSED)

    def matches(self, tool: str, claude_name: str = "") -> bool:
        if not self.matcher or self.matcher == "*":
            return True
        try:
            pattern = re.compile(self.matcher)
        except re.error:
            return False
        return bool(pattern.fullmatch(tool) or (claude_name and pattern.fullmatch(claude_name)))


@dataclass(frozen=True)
class HookSettings:
    """The parsed ``hooks`` section (empty: hooks are off)."""

    hooks: tuple[HookSpec, ...] = ()
    plugin_dir: str = ""
    """Where python hooks' modules are; empty: ``<workspace>/.ai-coding/hooks``."""

    def at(self, point: HookPoint) -> list[HookSpec]:
        return [h for h in self.hooks if h.point == point]


def parse_hooks(raw: Any, source_of: Any = None) -> tuple[HookSettings, list[str]]:
    """The ``hooks`` section as settings plus warnings; a wrong entry is a ConfigError naming it.

    ``source_of(dotted)`` names the layer that set a key ("user:...", "project:...") so python hooks,
    which run inside the loop service, are taken from the user layer only."""
    if raw is None or raw == {}:
        return HookSettings(), []
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config key `hooks` must be a mapping, got {type(raw).__name__}",
                          hint="See docs/hooks.md for the format.")
    warnings: list[str] = []
    specs: list[HookSpec] = []
    plugin_dir = str(raw.get("plugin_dir") or "")
    for key, value in raw.items():
        if key in ("plugin_dir", "events"):
            continue
        if key in _CLAUDE_BY_KEY:
            specs += _claude_entries(_CLAUDE_BY_KEY[key], value)
        elif key in CLAUDE_UNSUPPORTED or _camel(key) in CLAUDE_UNSUPPORTED:
            warnings.append(f"hooks.{key}: Claude Code's {_camel(key)} event has no point here; its hooks are "
                            "ignored (docs/hooks.md lists what is supported)")
        else:
            raise ConfigError(f"unknown key `hooks.{key}`",
                              hint="Use hooks.events (a list), hooks.plugin_dir, or a Claude Code event "
                                   f"({', '.join(CLAUDE_EVENTS)}).")
    events = raw.get("events") or []
    if not isinstance(events, Sequence) or isinstance(events, str):
        raise ConfigError("config key `hooks.events` must be a list of hook entries", hint="See docs/hooks.md.")
    names: set[str] = {s.name for s in specs}
    for index, entry in enumerate(events):
        spec = _entry(entry, index)
        if spec.kind is HookKind.PYTHON and source_of is not None:
            where = str(source_of("hooks.events") or "")
            if where.startswith("project:"):
                warnings.append(f"hooks.events[{index}] ({spec.name}): python hooks run inside the loop service "
                                "and come only from the user config; dropped")
                continue
        if spec.name in names:
            raise ConfigError(f"hooks.events[{index}]: the name {spec.name!r} is used twice",
                              hint="Give each hook its own name: /hooks and the trace tell them apart by it.")
        names.add(spec.name)
        specs.append(spec)
    return HookSettings(tuple(specs), plugin_dir), warnings


def _camel(key: str) -> str:
    """``subagent_stop`` / ``notification`` (as the config loader normalizes them) -> Claude Code's spelling."""
    return key if key[:1].isupper() else "".join(part.capitalize() for part in key.split("_"))


def _entry(entry: Any, index: int) -> HookSpec:
    where = f"hooks.events[{index}]"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a mapping (point, kind, command...)", hint="See docs/hooks.md.")
    name = str(entry.get("name") or f"{entry.get('point', 'hook')}#{index}")
    label = f"{where} ({name})"
    raw_point = str(entry.get("point") or "")
    if raw_point not in MATRIX:
        raise ConfigError(f"{label}: unknown point {raw_point!r}", hint=f"Use one of: {', '.join(POINTS)}.")
    point = HookPoint(raw_point)
    caps = _capabilities(entry, label)
    lacking = caps - MATRIX[point]
    if lacking:
        raise ConfigError(
            f"{label}: point {point} cannot {'/'.join(sorted(lacking))} (it allows "
            f"{', '.join(sorted(MATRIX[point]))})",
            hint="Only tool.before may block or rewrite; move the hook there or drop the capability.")
    kind = str(entry.get("kind") or "command")
    matcher = str(entry.get("matcher") or "")
    if matcher and point not in TOOL_POINTS:
        raise ConfigError(f"{label}: matcher applies only at tool.before / tool.after", hint="Remove it.")
    _check_regex(matcher, label)
    timeout = _timeout(entry.get("timeout_seconds", DEFAULT_TIMEOUT_S), label)
    env = entry.get("env") or {}
    if not isinstance(env, Mapping):
        raise ConfigError(f"{label}: env must be a mapping of NAME: value")
    common: dict[str, Any] = {"name": name, "point": point, "capabilities": caps, "matcher": matcher,
                              "timeout_seconds": timeout, "raw": bool(entry.get("raw", False)),
                              "env": tuple((str(k), str(v)) for k, v in env.items())}
    if kind == "command":
        return HookSpec(kind=HookKind.COMMAND, argv=_argv(entry.get("command"), label), **common)
    if kind == "python":
        module = str(entry.get("module") or "")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", module):
            raise ConfigError(f"{label}: a python hook needs `module:` (a module name in plugin_dir)")
        return HookSpec(kind=HookKind.PYTHON, module=module, function=str(entry.get("function") or "hook"), **common)
    raise ConfigError(f"{label}: unknown kind {kind!r}", hint="Use kind: command or kind: python.")


def _capabilities(entry: Mapping[str, Any], label: str) -> frozenset[Capability]:
    raw = entry.get("capabilities", entry.get("capability", ["observe"]))
    items = [raw] if isinstance(raw, str) else list(raw or ["observe"])
    caps: set[Capability] = set()
    for item in items:
        try:
            caps.add(Capability(str(item)))
        except ValueError:
            raise ConfigError(f"{label}: unknown capability {item!r}",
                              hint=f"Use: {', '.join(c.value for c in Capability)}.") from None
    return frozenset(caps)


def _argv(command: Any, label: str) -> tuple[str, ...]:
    if isinstance(command, str) and command.strip():
        return ("/bin/sh", "-c", command)
    if isinstance(command, Sequence) and command and all(isinstance(c, str) for c in command):
        return tuple(command)
    raise ConfigError(f"{label}: a command hook needs `command:` (a shell line or a list of arguments)")


def _timeout(value: Any, label: str) -> float:
    try:
        timeout = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{label}: timeout must be a number of seconds, got {value!r}") from None
    if timeout <= 0:
        raise ConfigError(f"{label}: timeout must be above 0 seconds, got {value!r}")
    return timeout


def _check_regex(matcher: str, label: str) -> None:
    if matcher and matcher != "*":
        try:
            re.compile(matcher)
        except re.error as err:
            raise ConfigError(f"{label}: matcher {matcher!r} is not a valid regex ({err})") from None


def _claude_entries(event: str, groups: Any) -> list[HookSpec]:
    point, caps = CLAUDE_EVENTS[event]
    where = f"hooks.{event}"
    if not isinstance(groups, Sequence) or isinstance(groups, str):
        raise ConfigError(f"{where} must be a list of {{matcher, hooks: [...]}} groups",
                          hint="This is Claude Code's settings.json format; see docs/hooks.md.")
    specs: list[HookSpec] = []
    for g, group in enumerate(groups):
        if not isinstance(group, Mapping):
            raise ConfigError(f"{where}[{g}] must be a mapping with `hooks:`")
        matcher = str(group.get("matcher") or "")
        label = f"{where}[{g}]"
        if matcher and point not in TOOL_POINTS:
            matcher = ""  # Claude Code ignores matchers on these events too
        _check_regex(matcher, label)
        for h, hook in enumerate(group.get("hooks") or []):
            hlabel = f"{label}.hooks[{h}]"
            if not isinstance(hook, Mapping) or str(hook.get("type") or "command") != "command":
                raise ConfigError(f"{hlabel}: only `type: command` hooks are supported",
                                  hint="docs/hooks.md lists what is not supported.")
            command = hook.get("command")
            if not isinstance(command, str) or not command.strip():
                raise ConfigError(f"{hlabel}: `command:` must be a shell line")
            specs.append(HookSpec(
                name=f"{event}[{g}.{h}]", point=point, kind=HookKind.COMMAND, capabilities=caps,
                argv=("/bin/sh", "-c", command), matcher=matcher,
                timeout_seconds=_timeout(hook.get("timeout", CLAUDE_DEFAULT_TIMEOUT_S), hlabel),
                claude_event=event))
    return specs


def describe(spec: HookSpec) -> str:
    """One line for /hooks."""
    what = shlex.join(spec.argv[2:] if spec.argv[:2] == ("/bin/sh", "-c") else spec.argv) if spec.kind is HookKind.COMMAND \
        else f"{spec.module}.{spec.function}"
    caps = ",".join(sorted(spec.capabilities))
    match = f" [{spec.matcher}]" if spec.matcher else ""
    fmt = " (Claude Code format)" if spec.claude_event else ""
    return f"{spec.name}: {spec.point}{match} · {spec.kind} · {caps} · {what}{fmt}"


@dataclass
class LastRun:
    """What a hook did the last time it ran (for /hooks)."""

    outcome: str
    detail: str = ""
    duration_ms: float = 0.0
    at: float = 0.0
    runs: int = 0
    failures: int = 0
    history: list[str] = field(default_factory=list)
