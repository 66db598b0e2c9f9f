"""The one argument check: a dataclass's schema and its parse, and a foreign JSON schema (an MCP
server's) checked the same way, each refusal naming the field and what to send."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from services.kernel.tool_args import ArgumentError, arg, check_json, parse_args, schema_of


@dataclass(frozen=True)
class Item:
    name: str = arg()
    tags: list[str] | None = None


@dataclass(frozen=True)
class Args:
    path: str = arg("Where.", max_chars=8)
    count: int = arg("How many.", 3, minimum=1, maximum=10)
    ratio: float = arg("", 0.5, exclusive_minimum=0)
    mode: Literal["a", "b"] | None = None
    items: list[Item] | None = None
    extra: dict[str, Any] | None = None


def refusal(raw: Any, cls: type[Any] = Args) -> str:
    with pytest.raises(ArgumentError) as info:
        parse_args(cls, raw)
    return str(info.value)


def test_the_schema_says_types_bounds_nesting_and_what_is_required() -> None:
    schema = schema_of(Args)
    assert schema["required"] == ["path"] and schema["additionalProperties"] is False
    assert schema["properties"]["count"] == {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many."}
    assert schema["properties"]["mode"] == {"type": "string", "enum": ["a", "b"]}
    assert schema["properties"]["items"]["items"]["required"] == ["name"]
    assert "maxLength" not in schema["properties"]["path"]  # checked, not sent


def test_a_valid_call_parses_into_the_dataclass_with_defaults_and_nested_items() -> None:
    parsed = parse_args(Args, {"path": "a.py", "ratio": 2, "items": [{"name": "n", "tags": ["t"]}], "mode": None})
    assert parsed == Args("a.py", 3, 2.0, None, [Item("n", ["t"])], None)
    assert isinstance(parsed.ratio, float)
    assert parse_args(Args, {"path": "a", "count": 4.0}).count == 4  # a whole float is an integer


@pytest.mark.parametrize(("raw", "says"), [
    ({}, "`path` is required; send it"),
    ({"path": 3}, "`path` must be a string, not 3"),
    ({"path": "a", "count": True}, "`count` must be an integer"),
    ({"path": "a", "count": 11}, "`count` must be at most 10"),
    ({"path": "a", "ratio": 0}, "`ratio` must be more than 0"),
    ({"path": "a", "ratio": math.nan}, "`ratio` must be a finite number"),
    ({"path": "a", "mode": "c"}, "`mode` must be one of 'a', 'b'"),
    ({"path": "a", "items": [{"tags": []}]}, "`items[0].name` is required"),
    ({"path": "a", "items": [{"name": "n", "tags": [1]}]}, "`items[0].tags[0]` must be a string"),
    ({"path": "a", "lines": 3}, "`lines` is not a field of this tool (fields: path, count, ratio, mode, items, extra)"),
    ({"path": "a" * 9}, "`path` is 9 characters; at most 8 can work"),
    ([1], "the arguments must be a JSON object"),
])
def test_each_misfit_is_refused_naming_the_field(raw: Any, says: str) -> None:
    assert says in refusal(raw)


def test_a_foreign_schema_is_checked_the_same_way_under_its_path() -> None:
    schema = {"type": "object", "required": ["a"], "properties": {
        "a": {"type": ["integer", "null"]}, "b": {"anyOf": [{"type": "string"}, {"type": "array"}]},
        "c": {"type": "string", "minLength": 2}, "d": {"type": "object", "properties": {"e": {"const": 1}}}}}
    check_json(schema, {"a": None, "b": [], "c": "xy", "d": {"e": 1}, "unknown": "fine without additionalProperties"})
    for value, says in (({}, "`input.a` is required"), ({"a": "1"}, "`input.a` must be an integer or null"),
                        ({"a": 1, "b": 2}, "`input.b` fits none of the shapes"),
                        ({"a": 1, "c": "x"}, "`input.c` must have at least 2 characters"),
                        ({"a": 1, "d": {"e": 2}}, "`input.d.e` must be 1")):
        with pytest.raises(ArgumentError, match=f"^{says}".replace("(", r"\(").replace(")", r"\)")):
            check_json(schema, value, "input")


def test_a_value_nested_past_the_limit_is_refused_not_recursed_into() -> None:
    deep: Any = "x"
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(200):
        deep, schema = [deep], {"type": "array", "items": schema}
    with pytest.raises(ArgumentError, match="nested too deeply"):
        check_json(schema, deep)
