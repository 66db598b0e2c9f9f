"""One definition per tool's arguments: a frozen dataclass gives both the JSON schema the model is
sent and the parse of what it sends.

``define(name, description, Args, handler)`` builds the ``ToolDef``: its ``parameters`` come from
``schema_of(Args)`` and its handler gets an ``Args`` that ``parse_args`` checked first, so every
tool refuses a missing or mistyped argument with the same ``invalid_arguments`` sentence before
its own code runs. Supported field types: ``str``, ``int``, ``float``, ``bool``, ``list[str]``,
a ``Literal`` of strings, each optionally ``| None``; a field with a default is optional.
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import MISSING, Field, field, fields, is_dataclass
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from services.loop.core.errors import LoopError
from services.loop.core.ports import ToolCall, ToolContext, ToolDef, ToolOutcome
from services.loop.policy.permissions import Level

A = TypeVar("A")


class ArgumentError(LoopError, ValueError):
    """Arguments that do not fit the tool's definition; the text says what to send instead."""

    reason = "invalid_arguments"


def doc(text: str, default: Any = MISSING) -> Any:
    """A field with its description for the model (and its default, if optional)."""
    return field(default=default, metadata={"doc": text})


def _without_none(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return members[0], True
    return tp, False


def _schema(tp: Any) -> dict[str, Any]:
    tp, _ = _without_none(tp)
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if get_origin(tp) is list and get_args(tp) == (str,):
        return {"type": "array", "items": {"type": "string"}}
    if get_origin(tp) is Literal:
        return {"type": "string", "enum": list(get_args(tp))}
    raise TypeError(f"no JSON schema for argument type {tp!r}")


def _required(f: Field[Any]) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def schema_of(cls: type[Any]) -> dict[str, Any]:
    """The JSON schema of an arguments dataclass (what the model is sent)."""
    if not is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = get_type_hints(cls)
    properties: dict[str, Any] = {}
    for f in fields(cls):
        prop = _schema(hints[f.name])
        if f.metadata.get("doc"):
            prop["description"] = f.metadata["doc"]
        properties[f.name] = prop
    return {"type": "object", "properties": properties, "required": [f.name for f in fields(cls) if _required(f)]}


def _check(tp: Any, value: Any, name: str) -> Any:
    tp, nullable = _without_none(tp)
    if value is None and nullable:
        return None
    schema = _schema(tp)
    kind = schema["type"]
    ok = {"string": isinstance(value, str), "boolean": isinstance(value, bool),
          "integer": isinstance(value, int) and not isinstance(value, bool),
          "number": isinstance(value, int | float) and not isinstance(value, bool),
          "array": isinstance(value, list) and all(isinstance(v, str) for v in value)}[kind]
    what = {"string": "a string", "boolean": "true or false", "integer": "an integer", "number": "a number",
            "array": "a list of strings"}[kind]
    if ok and "enum" in schema and value not in schema["enum"]:
        ok, what = False, "one of " + ", ".join(repr(v) for v in schema["enum"])
    if not ok:
        raise ArgumentError(f"`{name}` must be {what}, not {value!r:.60}; send it again with that")
    return float(value) if kind == "number" else value


def parse_args(cls: type[A], raw: Mapping[str, Any]) -> A:
    """``raw`` (the model's arguments) as ``cls``; raises ``ArgumentError`` naming what to fix."""
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if raw.get(f.name) is None:
            if _required(f):
                raise ArgumentError(f"`{f.name}` is required; send it")
            continue
        values[f.name] = _check(hints[f.name], raw[f.name], f.name)
    return cls(**values)


def define(name: str, description: str, args: type[A],
           handler: Callable[[ToolContext, ToolCall, A], Awaitable[ToolOutcome]], *,
           permission: Level = Level.WARN, parallel_safe: bool = False, deferred: bool = False) -> ToolDef:
    """A loop tool whose schema and parse are ``args``: the handler runs only on valid arguments."""

    async def checked(ctx: ToolContext, call: ToolCall, arguments: dict[str, Any]) -> ToolOutcome:
        return await handler(ctx, call, parse_args(args, arguments))

    return ToolDef(name, description, schema_of(args), permission=permission, parallel_safe=parallel_safe,
                   deferred=deferred, handler=checked, args=args)
