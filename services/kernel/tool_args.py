"""One definition of a tool's arguments: a frozen dataclass gives the JSON schema the model is sent
and the parse of what it sends, so the two cannot drift.

``schema_of(Args)`` is the schema; ``parse_args(Args, raw)`` checks ``raw`` against that same schema
(``check_json``) and builds an ``Args``, raising ``ArgumentError`` with one sentence that names the
field and says what to send. ``check_json`` is also what checks a schema this project did not write
(an MCP server's tool), so every tool refuses bad arguments the same way, before its handler runs.

Field types: ``str``, ``int``, ``float``, ``bool``, a ``Literal`` of strings, ``dict[str, Any]``
(a free JSON object), a nested arguments dataclass, ``list[T]`` of any of these; each optionally
``| None``. A field with a default is optional. Fields are described with ``arg(...)``: its text
for the model, bounds (sent in the schema) and ``max_chars`` (checked, not sent: a limit the model
never meets in normal work need not cost bytes on every request).
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import MISSING, Field, field, fields, is_dataclass
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

A = TypeVar("A")

# How deep a JSON value is checked: deeper nesting is refused, not recursed into.
MAX_DEPTH = 32


class ArgumentError(ValueError):
    """Arguments that do not fit the tool's definition; the text names the field and what to send."""

    reason = "invalid_arguments"


def arg(text: str = "", default: Any = MISSING, *, default_factory: Any = MISSING, minimum: float | None = None,
        maximum: float | None = None, exclusive_minimum: float | None = None, max_chars: int | None = None) -> Any:
    """A field with its description for the model, its default (if optional) and its bounds."""
    bounds = {k: v for k, v in (("minimum", minimum), ("maximum", maximum),
                                 ("exclusiveMinimum", exclusive_minimum)) if v is not None}
    meta = {"doc": text, "bounds": bounds, "max_chars": max_chars}
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


def _without_none(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return members[0], True
    return tp, False


def _type_schema(tp: Any) -> dict[str, Any]:
    tp, _ = _without_none(tp)
    simple = {str: "string", bool: "boolean", int: "integer", float: "number"}
    if tp in simple:
        return {"type": simple[tp]}
    origin = get_origin(tp)
    if origin is Literal:
        return {"type": "string", "enum": list(get_args(tp))}
    if origin is list:
        return {"type": "array", "items": _type_schema(get_args(tp)[0])}
    if origin is dict or tp is dict:
        return {"type": "object"}
    if is_dataclass(tp):
        return schema_of(tp)  # type: ignore[arg-type]
    raise TypeError(f"no JSON schema for argument type {tp!r}")


def _required(f: Field[Any]) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


_SCHEMAS: dict[type[Any], dict[str, Any]] = {}


def schema_of(cls: type[Any]) -> dict[str, Any]:
    """The JSON schema of an arguments dataclass (what the model is sent; built once, never mutate it).
    Unknown fields are refused (``additionalProperties: false``): a misspelt option silently ignored
    does the wrong thing."""
    if cls not in _SCHEMAS:
        _SCHEMAS[cls] = _build_schema(cls)
    return _SCHEMAS[cls]


def _build_schema(cls: type[Any]) -> dict[str, Any]:
    if not is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = get_type_hints(cls)
    properties: dict[str, Any] = {}
    for f in fields(cls):
        prop = dict(_type_schema(hints[f.name]))
        prop.update(f.metadata.get("bounds") or {})
        if f.metadata.get("doc"):
            prop["description"] = f.metadata["doc"]
        properties[f.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [f.name for f in fields(cls) if _required(f)]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


_WHAT = {"string": "a string", "boolean": "true or false", "integer": "an integer", "number": "a number",
         "object": "a JSON object", "array": "a list", "null": "null"}


def _is(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "null":
        return value is None
    return True  # a type this checker does not know is the server's business


def _name(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def check_json(schema: Mapping[str, Any], value: Any, path: str = "", depth: int = 0) -> None:
    """Check ``value`` against ``schema`` (type, enum, const, properties, required,
    additionalProperties: false, items, minimum/maximum/exclusiveMinimum, minLength/maxLength,
    minItems/maxItems, anyOf/oneOf as "one of these fits"); other keywords are ignored. The first
    problem raises ``ArgumentError`` naming its field (``a.b[2]``)."""
    where = f"`{path}`" if path else "the arguments"
    if depth > MAX_DEPTH:
        raise ArgumentError(f"{where} is nested too deeply (more than {MAX_DEPTH} levels); send a flatter value")
    kinds = schema.get("type")
    wanted = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if wanted and not any(_is(value, k) for k in wanted):
        what = " or ".join(_WHAT.get(k, k) for k in wanted)
        raise ArgumentError(f"{where} must be {what}, not {value!r:.60}; send it again with that")
    if isinstance(value, float) and not math.isfinite(value):
        raise ArgumentError(f"{where} must be a finite number, not {value}")
    if "enum" in schema and value not in schema["enum"]:
        raise ArgumentError(f"{where} must be one of {', '.join(repr(v) for v in schema['enum'])}, not {value!r:.60}")
    if "const" in schema and value != schema["const"]:
        raise ArgumentError(f"{where} must be {schema['const']!r}, not {value!r:.60}")
    for choice in ("anyOf", "oneOf"):
        if choice in schema and not _fits_one(schema[choice], value, path, depth):
            raise ArgumentError(f"{where} fits none of the shapes the tool accepts; check its schema")
    if isinstance(value, int | float) and not isinstance(value, bool):
        _check_bounds(schema, value, where)
    if isinstance(value, str):
        _check_length(schema, len(value), where, "characters", "minLength", "maxLength")
    if isinstance(value, dict):
        _check_object(schema, value, path, depth)
    if isinstance(value, list):
        _check_length(schema, len(value), where, "items", "minItems", "maxItems")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                check_json(items, item, _name(path, index), depth + 1)


def _fits_one(choices: Any, value: Any, path: str, depth: int) -> bool:
    for choice in choices if isinstance(choices, list) else []:
        try:
            check_json(choice, value, path, depth + 1)
        except ArgumentError:
            continue
        return True
    return False


def _check_bounds(schema: Mapping[str, Any], value: float, where: str) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        raise ArgumentError(f"{where} must be at least {schema['minimum']} (got {value})")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        raise ArgumentError(f"{where} must be more than {schema['exclusiveMinimum']} (got {value})")
    if "maximum" in schema and value > schema["maximum"]:
        raise ArgumentError(f"{where} must be at most {schema['maximum']} (got {value})")


def _check_length(schema: Mapping[str, Any], size: int, where: str, unit: str, low: str, high: str) -> None:
    if low in schema and size < schema[low]:
        raise ArgumentError(f"{where} must have at least {schema[low]} {unit} (got {size})")
    if high in schema and size > schema[high]:
        raise ArgumentError(f"{where} must have at most {schema[high]} {unit} (got {size})")


def _allows_null(schema: Any) -> bool:
    kinds = schema.get("type") if isinstance(schema, Mapping) else None
    return kinds == "null" or (isinstance(kinds, list) and "null" in kinds)


def _check_object(schema: Mapping[str, Any], value: dict[str, Any], path: str, depth: int) -> None:
    props = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in value or (value[name] is None and not _allows_null(props.get(name))):
            raise ArgumentError(f"`{_name(path, name)}` is required; send it")
    if schema.get("additionalProperties") is False:
        for name in value:
            if name not in props:
                allowed = ", ".join(props) or "none"
                raise ArgumentError(f"`{_name(path, name)}` is not a field of this tool (fields: {allowed})")
    for name, item in value.items():
        if name in props and (item is not None or _allows_null(props[name])):
            check_json(props[name], item, _name(path, name), depth + 1)


def parse_args(cls: type[A], raw: Mapping[str, Any]) -> A:
    """``raw`` (the model's arguments) as ``cls``, checked against ``schema_of(cls)`` first; a
    ``None`` value counts as left out. Raises ``ArgumentError`` naming what to fix."""
    if not isinstance(raw, Mapping):
        raise ArgumentError(f"the arguments must be a JSON object, not {type(raw).__name__}; send one object")
    check_json(schema_of(cls), dict(raw))
    return _build(cls, raw, "")


def _build(cls: type[A], raw: Mapping[str, Any], path: str) -> A:
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if raw.get(f.name) is None:
            continue
        value = _value(hints[f.name], raw[f.name], _name(path, f.name))
        longest = f.metadata.get("max_chars")
        if longest is not None and isinstance(value, str) and len(value) > longest:
            raise ArgumentError(f"`{_name(path, f.name)}` is {len(value):,} characters; at most {longest:,} can "
                                f"work; send a shorter `{f.name}`")
        values[f.name] = value
    return cls(**values)


def _value(tp: Any, value: Any, path: str) -> Any:
    tp, _ = _without_none(tp)
    if tp is float:
        return float(value)
    if tp is int:
        return int(value)
    if get_origin(tp) is list:
        item = get_args(tp)[0]
        return [_value(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if is_dataclass(tp):
        return _build(tp, value, path)  # type: ignore[arg-type]
    return value
