"""Generate the ``run --json`` event schema and its reference page from the proto.

    python scripts/gen_event_schema.py           # rewrite both files
    python scripts/gen_event_schema.py --check   # exit 1 if either is out of date

Writes ``clients/cli/run_events.schema.json`` (JSON Schema 2020-12, shipped in the
package) and the generated part of ``docs/events.md``. Both come from the
``TurnEvent`` descriptor, so an event added to the proto without regenerating
fails tests/unit/cli/test_cli_run_json_schema.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

from ai_coding.v1 import loop_pb2  # noqa: E402
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor  # noqa: E402

from clients.cli.event_json import SCHEMA_VERSION  # noqa: E402

SCHEMA_PATH = ROOT / "clients" / "cli" / "run_events.schema.json"
DOC_PATH = ROOT / "docs" / "events.md"
BEGIN, END = "<!-- generated: events begin -->", "<!-- generated: events end -->"
ENVELOPE = ("seq", "session_id", "turn", "ts")

_INTEGER = {FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
            FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
            FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED32,
            FieldDescriptor.TYPE_SFIXED64}
_NUMBER = {FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT}


def _field_schema(field: FieldDescriptor, defs: dict[str, Any]) -> dict[str, Any]:
    if field.message_type is not None:
        if field.message_type.GetOptions().map_entry:
            raise SystemExit(f"{field.full_name}: map fields are not supported by this generator")
        _message_def(field.message_type, defs)
        item: dict[str, Any] = {"$ref": f"#/$defs/{field.message_type.name}"}
    elif field.enum_type is not None:
        item = {"enum": _enum_names(field.enum_type)}
    elif field.type in _INTEGER:
        item = {"type": "integer"}
    elif field.type in _NUMBER:
        item = {"type": "number"}
    elif field.type == FieldDescriptor.TYPE_BOOL:
        item = {"type": "boolean"}
    elif field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        item = {"type": "string"}
    else:
        raise SystemExit(f"{field.full_name}: field type {field.type} is not supported by this generator")
    return {"type": "array", "items": item} if field.is_repeated else item


def _enum_names(enum: EnumDescriptor) -> list[str]:
    return [value.name for value in enum.values]


def _message_def(message: Descriptor, defs: dict[str, Any]) -> None:
    if message.name in defs:
        return
    defs[message.name] = {}  # placed first: a recursive message refers to itself
    properties = {f.json_name: _field_schema(f, defs) for f in message.fields}
    defs[message.name] = {"type": "object", "properties": properties, "additionalProperties": False}


def build_schema() -> dict[str, Any]:
    """The JSON Schema of one line of ``run --json``."""
    event = loop_pb2.TurnEvent.DESCRIPTOR
    defs: dict[str, Any] = {}
    properties: dict[str, Any] = {"schemaVersion": {"const": SCHEMA_VERSION,
                                                    "description": "Only on the first line of a run."}}
    for name in ENVELOPE:
        field = event.fields_by_name[name]
        properties[field.json_name] = _field_schema(field, defs)
    properties["seq"]["minimum"] = 1
    oneof = event.oneofs_by_name["event"]
    for field in oneof.fields:
        properties[field.json_name] = _field_schema(field, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"ai-coding run --json event, schema version {SCHEMA_VERSION}",
        "description": "One TurnEvent per line: protobuf JSON mapping with 64-bit integers as numbers; "
                       "fields at their default value are left out. Generated from protos/ai_coding/v1/"
                       "loop.proto by scripts/gen_event_schema.py.",
        "type": "object",
        "properties": properties,
        "required": ["seq", "ts"],
        "additionalProperties": False,
        "oneOf": [{"required": [field.json_name]} for field in oneof.fields],
        "$defs": dict(sorted(defs.items())),
    }


def render_schema() -> str:
    return json.dumps(build_schema(), indent=1, sort_keys=False) + "\n"


def render_doc_table() -> str:
    """The generated part of docs/events.md: one row per event kind with its fields."""
    event = loop_pb2.TurnEvent.DESCRIPTOR
    rows = ["| key | proto field | message | fields |", "|---|---|---|---|"]
    for field in event.oneofs_by_name["event"].fields:
        message = field.message_type
        if message is None:
            raise SystemExit(f"{field.full_name}: TurnEvent.event members must be messages")
        names = ", ".join(f"`{f.json_name}`" for f in message.fields) or "(none)"
        rows.append(f"| `{field.json_name}` | {field.number} | `{message.name}` | {names} |")
    return "\n".join([BEGIN, *rows, END])


def render_doc(current: str) -> str:
    if BEGIN not in current or END not in current:
        raise SystemExit(f"{DOC_PATH}: the markers {BEGIN} / {END} are missing")
    head, rest = current.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + render_doc_table() + tail


def main(argv: list[str]) -> int:
    schema, doc = render_schema(), render_doc(DOC_PATH.read_text(encoding="utf-8"))
    if "--check" in argv:
        stale = [str(p.relative_to(ROOT)) for p, text in ((SCHEMA_PATH, schema), (DOC_PATH, doc))
                 if not p.exists() or p.read_text(encoding="utf-8") != text]
        if stale:
            print(f"out of date: {', '.join(stale)}; run python scripts/gen_event_schema.py", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_text(schema, encoding="utf-8")
    DOC_PATH.write_text(doc, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
