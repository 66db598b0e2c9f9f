"""Trace previews: JSON-able, redacted and capped, whatever shape an event field has."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from services.loop.core.ports import Usage
from services.loop.tracing.writer import PREVIEW_CHARS, preview


@dataclass
class _Call:
    name: str
    arguments: str
    extra: list[str] = field(default_factory=list)


def test_a_dataclass_field_is_previewed_field_by_field_with_secrets_redacted() -> None:
    call = _Call("bash", 'curl -H "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123"', ["x" * 2000])
    shown = preview({"calls": [call], "usage": Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12)})
    json.dumps(shown)  # JSON-able as it is
    first = shown["calls"][0]
    assert first["name"] == "bash" and "abcdefghijklmnopqrstuvwxyz0123" not in first["arguments"]
    assert "[redacted]" in first["arguments"]
    assert first["extra"][0].startswith("x" * PREVIEW_CHARS) and first["extra"][0].endswith("...[2000 chars]")
    assert shown["usage"]["prompt_tokens"] == 10 and shown["usage"]["cached_tokens"] is None
    assert isinstance(call.extra[0], str) and len(call.extra[0]) == 2000  # the event itself is untouched


def test_lists_are_capped_at_fifty_items_and_plain_values_pass_through() -> None:
    assert len(preview(list(range(80)))) == 50
    assert preview((1, "a", None, 2.5)) == [1, "a", None, 2.5]
    assert preview(7) == 7
