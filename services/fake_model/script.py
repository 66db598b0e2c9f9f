"""Parsing and validating fake-model scripts (format: see the package docstring).

Everything here is pure: ``parse_script`` turns plain data (from YAML, JSON or
Python) into frozen dataclasses, or raises one ``ScriptError`` that names the
step and the field that is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.fake_model.errors import ScriptError
from services.fake_model.wire import WIRE_SHAPES

USAGE_SHAPES = ("openai", "deepseek", "bare", "none")
ORDERS = ("strict", "first_match")
FAULT_KINDS = ("rate_limit", "server_error", "stall", "context_length", "drop", "http_error", "auth_error")
DEFAULT_MODELS = ("fake-model",)

_STEP_KEYS = {
    "match", "text", "reasoning", "tool_calls", "usage_shape", "usage", "delay_ms", "chunk_delay_ms",
    "finish_reason", "repeat", "fault", "chunk_chars", "name", "wire", "require_reasoning_echo",
    "match_first_user", "match_anywhere", "match_absent", "reject_params", "reject_style", "argument_chunk_chars",
}
_TOOL_KEYS = {"name", "arguments", "arguments_raw", "id"}
_FAULT_KEYS = {"kind", "retry_after", "after_chunks", "seconds", "status", "message", "code", "body", "style",
               "window"}
ERROR_BODIES = ("openai", "string", "list", "text", "html")
CONTEXT_STYLES = ("openai", "llamacpp", "gemini")
REJECT_STYLES = ("openai", "pydantic")
_USAGE_KEYS = {"prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens"}


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call the fake model will emit; ``arguments_json`` is sent verbatim (it may be broken)."""

    name: str
    arguments_json: str
    id: str = ""


@dataclass(frozen=True)
class Fault:
    """An injected failure instead of (or in the middle of) a normal reply."""

    kind: str
    retry_after: float = 1.0
    after_chunks: int = 1
    seconds: float | None = None
    status: int = 500
    message: str = ""
    code: str = ""
    body: str = "openai"
    """``http_error``'s body shape: openai | string | list | text | html."""
    style: str = "openai"
    """``context_length``'s wording: openai | llamacpp | gemini."""
    window: int = 0
    """The window ``context_length`` states (0: 128000)."""


@dataclass(frozen=True)
class Step:
    """One scripted reply, answering ``repeat`` requests (``None``: every request from here on)."""

    match: tuple[str, ...] = ()
    match_first_user: tuple[str, ...] = ()
    """Substrings the request's first user message must contain (tells a child's request from its parent's)."""
    match_anywhere: tuple[str, ...] = ()
    """Substrings that must occur somewhere in the request's messages."""
    match_absent: tuple[str, ...] = ()
    """Substrings that must occur nowhere in the request's messages."""
    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    usage_shape: str = "openai"
    usage: dict[str, int] = field(default_factory=dict)
    delay_ms: float = 0.0
    chunk_delay_ms: float = 0.0
    finish_reason: str = ""
    repeat: int | None = 1
    fault: Fault | None = None
    chunk_chars: int = 12
    argument_chunk_chars: int = 8
    """Tool-call argument characters per chunk (huge-argument tests send them in big pieces)."""
    name: str = ""
    wire: str = "openai"
    require_reasoning_echo: bool = False
    reject_params: tuple[str, ...] = ()
    """Request fields refused with HTTP 400 while the request carries them (no step is consumed)."""
    reject_style: str = "openai"

    def effective_finish_reason(self) -> str:
        """The scripted finish reason, else ``tool_calls`` when the step calls tools, else ``stop``."""
        if self.finish_reason:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    def label(self, index: int) -> str:
        """How error messages name this step: ``step 3`` or ``step 3 (read-the-code)``."""
        return f"step {index + 1}" + (f" ({self.name})" if self.name else "")


@dataclass(frozen=True)
class Script:
    """A whole script: the steps in order and the model ids ``/v1/models`` lists."""

    steps: tuple[Step, ...] = ()
    models: tuple[str, ...] = DEFAULT_MODELS
    order: str = "strict"
    context_window: int = 0
    """Tokens a request may have (request bytes / 4, as usage counts them); over it the reply is the
    provider's context_length error and no step is consumed. 0 = unlimited."""
    window_style: str = "openai"
    """How the over-window error is worded: openai | llamacpp | gemini."""


def load_script_file(path: str | Path) -> Script:
    """Read a YAML or JSON script file; a missing file or a syntax error is a ``ScriptError``."""
    import yaml

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as err:
        raise ScriptError(f"cannot read fake-model script {file}: {err.strerror or err}.",
                          hint="Pass an existing YAML or JSON file with --script.") from err
    try:
        data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        raise ScriptError(f"fake-model script {file} is not valid {'JSON' if file.suffix == '.json' else 'YAML'}: "
                          f"{_one_line(str(err))}", hint="Fix the syntax and retry.") from err
    try:
        return parse_script(data)
    except ScriptError as err:
        raise ScriptError(f"{file}: {err.message}", hint=err.hint) from err


def coerce_script(script: Script | str | Path | list[Any] | dict[str, Any] | None) -> Script:
    """Accept a ``Script``, a file path, or plain data (a list of steps or ``{"steps": [...]}``)."""
    if script is None:
        return Script()
    if isinstance(script, Script):
        return script
    if isinstance(script, str | Path):
        return load_script_file(script)
    return parse_script(script)


def parse_script(data: Any) -> Script:
    """Validate plain data into a ``Script``: a list of steps, or a mapping with ``steps``, ``models``, ``order``."""
    if data is None:
        return Script()
    models: tuple[str, ...] = DEFAULT_MODELS
    order = "strict"
    context_window = 0
    window_style = "openai"
    if isinstance(data, dict):
        unknown = set(data) - {"steps", "models", "order", "context_window", "window_style"}
        if unknown:
            raise ScriptError(f"unknown top-level key(s) {sorted(unknown)} in the fake-model script.",
                              hint="Use 'steps' (a list), optionally 'models' (a list of ids), 'order' and "
                                   "'context_window'.")
        context_window = data.get("context_window", 0)
        if not isinstance(context_window, int) or isinstance(context_window, bool) or context_window < 0:
            raise ScriptError(f"'context_window' must be a non-negative integer (tokens), not {context_window!r}.")
        window_style = data.get("window_style", "openai")
        if window_style not in CONTEXT_STYLES:
            raise ScriptError(f"'window_style' must be one of {', '.join(CONTEXT_STYLES)}, not {window_style!r}.")
        order = data.get("order", "strict")
        if order not in ORDERS:
            raise ScriptError(f"'order' must be one of {', '.join(ORDERS)}, not {order!r}.")
        raw_models = data.get("models", list(DEFAULT_MODELS))
        if not isinstance(raw_models, list) or not all(isinstance(m, str) and m for m in raw_models):
            raise ScriptError("'models' must be a list of non-empty strings.")
        models = tuple(raw_models) or DEFAULT_MODELS
        data = data.get("steps") or []
    if not isinstance(data, list):
        raise ScriptError(f"a fake-model script must be a list of steps, not {type(data).__name__}.",
                          hint="Write '- text: ...' items, or a mapping with a 'steps' list.")
    return Script(steps=tuple(parse_step(raw, i) for i, raw in enumerate(data)), models=models, order=order,
                  context_window=context_window, window_style=window_style)


def parse_step(raw: Any, index: int) -> Step:
    """Validate one step; errors name ``step N`` (1-based) and the field."""
    where = f"step {index + 1}"
    if not isinstance(raw, dict):
        raise ScriptError(f"{where} must be a mapping, not {type(raw).__name__}.")
    unknown = set(raw) - _STEP_KEYS
    if unknown:
        raise ScriptError(f"{where} has unknown key(s) {sorted(unknown)}.",
                          hint=f"Known keys: {', '.join(sorted(_STEP_KEYS))}.")
    usage_shape = _get(raw, "usage_shape", str, where, "openai")
    if usage_shape not in USAGE_SHAPES:
        raise ScriptError(f"{where}: usage_shape must be one of {', '.join(USAGE_SHAPES)}, not {usage_shape!r}.")
    wire = _get(raw, "wire", str, where, "openai")
    if wire not in WIRE_SHAPES:
        raise ScriptError(f"{where}: wire must be one of {', '.join(WIRE_SHAPES)}, not {wire!r}.")
    chunk_chars = _get(raw, "chunk_chars", int, where, 12)
    if chunk_chars < 1:
        raise ScriptError(f"{where}: chunk_chars must be at least 1.")
    argument_chunk_chars = _get(raw, "argument_chunk_chars", int, where, 8)
    if argument_chunk_chars < 1:
        raise ScriptError(f"{where}: argument_chunk_chars must be at least 1.")
    return Step(
        match=_parse_match(raw.get("match"), where),
        match_first_user=_parse_match(raw.get("match_first_user"), where, "match_first_user"),
        match_anywhere=_parse_match(raw.get("match_anywhere"), where, "match_anywhere"),
        match_absent=_parse_match(raw.get("match_absent"), where, "match_absent"),
        text=_get(raw, "text", str, where, ""),
        reasoning=_get(raw, "reasoning", str, where, ""),
        tool_calls=tuple(_parse_tool_call(t, f"{where} tool_calls[{k}]")
                         for k, t in enumerate(_get(raw, "tool_calls", list, where, []))),
        usage_shape=usage_shape,
        usage=_parse_usage(raw.get("usage"), where),
        delay_ms=_non_negative(raw, "delay_ms", where),
        chunk_delay_ms=_non_negative(raw, "chunk_delay_ms", where),
        finish_reason=_get(raw, "finish_reason", str, where, ""),
        repeat=_parse_repeat(raw.get("repeat", 1), where),
        fault=_parse_fault(raw.get("fault"), where),
        chunk_chars=chunk_chars,
        argument_chunk_chars=argument_chunk_chars,
        name=_get(raw, "name", str, where, ""),
        wire=wire,
        require_reasoning_echo=_get(raw, "require_reasoning_echo", bool, where, False),
        reject_params=_parse_match(raw.get("reject_params"), where, "reject_params"),
        reject_style=_choice(raw, "reject_style", REJECT_STYLES, where),
    )


def _choice(raw: dict[str, Any], key: str, allowed: tuple[str, ...], where: str) -> str:
    value = raw.get(key, allowed[0])
    if value not in allowed:
        raise ScriptError(f"{where}: {key} must be one of {', '.join(allowed)}, not {value!r}.")
    return str(value)


def _parse_match(raw: Any, where: str, key: str = "match") -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and all(isinstance(m, str) for m in raw):
        return tuple(raw)
    raise ScriptError(f"{where}: {key} must be a string or a list of strings.")


def _parse_tool_call(raw: Any, where: str) -> ToolCallSpec:
    if not isinstance(raw, dict):
        raise ScriptError(f"{where} must be a mapping with 'name' and 'arguments'.")
    unknown = set(raw) - _TOOL_KEYS
    if unknown:
        raise ScriptError(f"{where} has unknown key(s) {sorted(unknown)}.",
                          hint=f"Known keys: {', '.join(sorted(_TOOL_KEYS))}.")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ScriptError(f"{where}: 'name' is required (the tool's name).")
    if "arguments" in raw and "arguments_raw" in raw:
        raise ScriptError(f"{where}: give either 'arguments' (an object) or 'arguments_raw' (a string), not both.")
    if "arguments_raw" in raw:
        arguments_json = _get(raw, "arguments_raw", str, where, "")
    else:
        arguments = raw.get("arguments", {})
        if not isinstance(arguments, dict):
            raise ScriptError(f"{where}: 'arguments' must be a mapping; use 'arguments_raw' for a raw string.")
        arguments_json = json.dumps(arguments, ensure_ascii=False)
    return ToolCallSpec(name=name, arguments_json=arguments_json, id=_get(raw, "id", str, where, ""))


def _parse_fault(raw: Any, where: str) -> Fault | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"kind": raw}
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: fault must be a kind name or a mapping with 'kind'.")
    unknown = set(raw) - _FAULT_KEYS
    if unknown:
        raise ScriptError(f"{where}: fault has unknown key(s) {sorted(unknown)}.",
                          hint=f"Known keys: {', '.join(sorted(_FAULT_KEYS))}.")
    kind = raw.get("kind")
    if kind not in FAULT_KINDS:
        raise ScriptError(f"{where}: fault kind must be one of {', '.join(FAULT_KINDS)}, not {kind!r}.")
    where = f"{where} fault"
    seconds = raw.get("seconds")
    if seconds is not None and (not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0):
        raise ScriptError(f"{where}: seconds must be a non-negative number (omit it to stall forever).")
    after_chunks = _get(raw, "after_chunks", int, where, 1)
    if after_chunks < 0:
        raise ScriptError(f"{where}: after_chunks must be 0 or more.")
    status = _get(raw, "status", int, where, 500)
    if not 400 <= status <= 599:
        raise ScriptError(f"{where}: status must be an HTTP error status (400-599), not {status}.")
    return Fault(
        kind=kind,
        retry_after=_non_negative(raw, "retry_after", where, 1.0),
        after_chunks=after_chunks,
        seconds=None if seconds is None else float(seconds),
        status=status,
        message=_get(raw, "message", str, where, ""),
        code=_get(raw, "code", str, where, ""),
        body=_choice(raw, "body", ERROR_BODIES, where),
        style=_choice(raw, "style", CONTEXT_STYLES, where),
        window=_get(raw, "window", int, where, 0),
    )


def _parse_usage(raw: Any, where: str) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: usage must be a mapping of token counts.")
    unknown = set(raw) - _USAGE_KEYS
    if unknown:
        raise ScriptError(f"{where}: usage has unknown key(s) {sorted(unknown)}.",
                          hint=f"Known keys: {', '.join(sorted(_USAGE_KEYS))}.")
    for key, value in raw.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ScriptError(f"{where}: usage.{key} must be a non-negative integer.")
    return dict(raw)


def _parse_repeat(raw: Any, where: str) -> int | None:
    if raw == "forever":
        return None
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 1:
        return raw
    raise ScriptError(f"{where}: repeat must be a positive integer or 'forever', not {raw!r}.")


def _get(raw: dict[str, Any], key: str, kind: type, where: str, default: Any) -> Any:
    value = raw.get(key, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ScriptError(f"{where}: {key} must be a {kind.__name__}, not {type(value).__name__}.")
    return value


def _non_negative(raw: dict[str, Any], key: str, where: str, default: float = 0.0) -> float:
    value = raw.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise ScriptError(f"{where}: {key} must be a non-negative number, not {value!r}.")
    return float(value)


def _one_line(text: str) -> str:
    return " ".join(text.split())
