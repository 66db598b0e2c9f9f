"""The ``output_schema`` contract of a subagent: the checks before a run and the tolerant parse after.

Pure functions. A schema is checked before any child starts: serialized over
``MAX_SCHEMA_CHARS`` it is refused as ``schema_too_large`` (it goes into the
child's prompt, unbounded it is a token bomb), not a JSON object as
``schema_invalid``. After the run the child's final text is parsed tolerantly
(code fences stripped, then the whole text, then the first balanced ``{...}``
inside prose); only the schema's ``required`` keys are checked (a documented
subset of JSON Schema: every other keyword is ignored, extra keys are fine) and
values are never coerced. A bad shape marks ``schema_valid`` false; it never
changes the run's status or drops its text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from services.kernel.tool_args import arg
from services.loop.core.errors import LoopError
from services.loop.policy.codes import ErrorCode

MAX_SCHEMA_CHARS = 4000
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n(.*?)```", re.S)


@dataclass(frozen=True)
class SubAgentArgs:
    """``subAgent``'s arguments (their schema is what the model is sent)."""

    task: str = arg("Self-contained: the child sees only this and context.")
    name: str | None = arg("Short label.", None)
    context: str | None = None
    background: bool | None = arg("Return a run id now; the result comes later.", None)
    output_schema: dict[str, Any] | None = arg("JSON Schema of the child's final JSON ('required' checked): "
                                               "packet 'facts'.", None)
    tools: list[str] | None = None
    model: str | None = None
    isolation: Literal["worktree", "shared"] | None = None


@dataclass(frozen=True)
class ApplyArgs:
    """``subagent_apply``'s arguments."""

    run_id: str = arg("Run id (or the child's name).")


APPLY_DESCRIPTION = ("Apply the changes a subagent left in its git worktree (the packet's 'worktree') to your "
                     "tree, all or nothing; a conflict applies nothing.")
SUBAGENT_DESCRIPTION = ("Delegate a task to a child agent (fresh history, own limits, no subAgent). Returns a "
                        "packet: status, final_text, files_changed, usage. A writing child in a git repository "
                        "works in a worktree (apply with subagent_apply).")


class SchemaRefused(LoopError, ValueError):
    """An ``output_schema`` the run refuses before starting; ``code`` is the tool error code."""

    reason = "schema_refused"

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def check_schema(schema: Any) -> dict[str, Any]:
    """The schema as given, or ``SchemaRefused`` (``schema_invalid`` / ``schema_too_large``)."""
    if not isinstance(schema, dict):
        raise SchemaRefused(ErrorCode.SCHEMA_INVALID, f"output_schema must be a JSON object (a schema with 'properties' and "
                                              f"'required'), not {type(schema).__name__}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(k, str) for k in required):
        raise SchemaRefused(ErrorCode.SCHEMA_INVALID, "output_schema.required must be a list of key names")
    size = len(json.dumps(schema, ensure_ascii=False))
    if size > MAX_SCHEMA_CHARS:
        raise SchemaRefused(ErrorCode.SCHEMA_TOO_LARGE, f"output_schema is {size} characters serialized; the limit is "
                                                f"{MAX_SCHEMA_CHARS} (it is sent to the child): send a smaller one")
    return schema


def schema_instructions(schema: dict[str, Any]) -> str:
    """What the child is told about the contract (appended to its task)."""
    required = ", ".join(schema.get("required", [])) or "(none required)"
    return ("When you are done, end your final answer with one JSON object matching this schema "
            f"(required keys: {required}):\n{json.dumps(schema, ensure_ascii=False)}")


@dataclass(frozen=True)
class ContractResult:
    """What the parse found: ``facts`` (the JSON object, or None), whether it holds, and why not."""

    facts: dict[str, Any] | None
    valid: bool
    errors: list[str] = field(default_factory=list)


def parse_facts(text: str, schema: dict[str, Any]) -> ContractResult:
    """The child's JSON verdict from ``text`` (tolerant parse, strict content: see the module doc)."""
    facts = _find_object(text)
    if facts is None:
        return ContractResult(None, False, ["no JSON object found in the final answer"])
    missing = [k for k in schema.get("required", []) if k not in facts]
    errors = [f"missing required key {k!r}" for k in missing]
    return ContractResult(facts, not errors, errors)


def _find_object(text: str) -> dict[str, Any] | None:
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        value = _loads(candidate.strip())
        if isinstance(value, dict):
            return value
    for candidate in candidates:
        value = _first_balanced(candidate)
        if value is not None:
            return value
    return None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _first_balanced(text: str) -> dict[str, Any] | None:
    """The first ``{...}`` block that parses as an object (braces inside strings respected)."""
    start = text.find("{")
    while start >= 0:
        depth, in_string, escaped = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    value = _loads(text[start:i + 1])
                    if isinstance(value, dict):
                        return value
                    break
        start = text.find("{", start + 1)
    return None
