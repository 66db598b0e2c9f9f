"""A hook's answer in our format, and what a hook sees of secrets (nothing, unless ``raw``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from services.loop.hooks.runner import HookFailed, RawAnswer
from services.loop.tracing.writer import redact


@dataclass
class Verdict:
    """What one hook said, read into our terms."""

    block: str | None = None
    """The reason, when it blocks."""
    arguments: dict[str, Any] | None = None
    context: str = ""



def read_answer(answer: RawAnswer) -> Verdict:
    """Our format: exit 0 and one JSON object line (or nothing) on stdout.

    ``{"decision": "block", "reason": ...}`` blocks, ``{"arguments": {...}}`` rewrites,
    ``{"context": "..."}`` injects; ``{}`` or no output lets things go on."""
    if answer.code != 0:
        raise HookFailed("failed", f"exited with status {answer.code}" + _stderr(answer))
    text = answer.stdout.strip()
    if not text:
        return Verdict()
    try:
        data = json.loads(text.splitlines()[-1])
    except ValueError:
        raise HookFailed("failed", f"its stdout is not one JSON line: {text[:120]!r}") from None
    if not isinstance(data, dict):
        raise HookFailed("failed", "its stdout JSON is not an object")
    verdict = Verdict(context=str(data.get("context") or ""))
    decision = str(data.get("decision") or "").lower()
    if decision in ("block", "deny"):
        verdict.block = str(data.get("reason") or "no reason given")
    arguments = data.get("arguments")
    if arguments is not None:
        if not isinstance(arguments, dict):
            raise HookFailed("failed", "its `arguments` is not a JSON object")
        verdict.arguments = arguments
    return verdict


def _stderr(answer: RawAnswer) -> str:
    text = answer.stderr.strip()
    return f": {text.splitlines()[-1][:200]}" if text else ""


def redact_value(value: Any) -> Any:
    """Every string in a JSON value with secret-shaped parts replaced (what a hook sees unless raw)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    return value


