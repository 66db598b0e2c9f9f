"""Arguments built from a tool's JSON schema: a valid example, and each way to spoil it (a required
field left out, a field of the wrong type, a field the tool does not have) with the sentence the
uniform check must answer it with. The tests of every tool's definition share these."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

WRONG: dict[str, Any] = {"string": 7, "integer": "3", "number": "1.5", "boolean": "yes", "array": "a",
                         "object": "a"}


def example(schema: dict[str, Any]) -> Any:
    """A value that fits ``schema``: every property given, numbers inside their bounds."""
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "string":
        return "x"
    if kind == "integer":
        return min(schema.get("minimum", 1), schema.get("maximum", 1_000))
    if kind == "number":
        low = schema["minimum"] if "minimum" in schema else schema.get("exclusiveMinimum", 1.0) + 0.5
        return float(min(low, schema.get("maximum", low)))
    if kind == "boolean":
        return True
    if kind == "array":
        return [example(schema.get("items") or {"type": "string"})]
    if kind == "object":
        return {name: example(prop) for name, prop in (schema.get("properties") or {}).items()}
    raise AssertionError(f"no example for schema {schema!r}")


@dataclass(frozen=True)
class Spoiled:
    """Arguments spoiled in one place and the words the refusal must say."""

    what: str
    arguments: dict[str, Any]
    says: str


def spoiled(schema: dict[str, Any], valid: dict[str, Any]) -> list[Spoiled]:
    """Every required field (nested ones too) left out, every field of the wrong type, one unknown field."""
    found: list[Spoiled] = []

    def walk(node: dict[str, Any], path: list[str | int], label: str) -> None:
        props = node.get("properties") or {}
        for name in node.get("required") or []:
            found.append(Spoiled(f"{label}{name} missing", _edit(valid, [*path, name], None),
                                 f"`{label}{name}` is required"))
        for name, prop in props.items():
            found.append(Spoiled(f"{label}{name} mistyped", _edit(valid, [*path, name], WRONG[prop["type"]]),
                                 f"`{label}{name}` must be"))
            if prop["type"] == "object" and prop.get("properties"):
                walk(prop, [*path, name], f"{label}{name}.")
            items = prop.get("items") or {}
            if prop["type"] == "array" and items.get("type") == "object":
                walk(items, [*path, name, 0], f"{label}{name}[0].")
        if node.get("additionalProperties") is False:
            found.append(Spoiled(f"{label}zz unknown", _edit(valid, [*path, "zz_unknown"], 1),
                                 f"`{label}zz_unknown` is not a field"))

    walk(schema, [], "")
    return found


def _edit(value: dict[str, Any], path: list[str | int], new: Any) -> dict[str, Any]:
    """A copy of ``value`` with the place at ``path`` set to ``new`` (None: removed)."""
    out = copy.deepcopy(value)
    node: Any = out
    for key in path[:-1]:
        node = node[key]
    if new is None:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = new
    return out
