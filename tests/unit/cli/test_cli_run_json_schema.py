"""The ``run --json`` stream's schema is generated from the proto and the printer follows it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
from ai_coding.v1 import common_pb2, loop_pb2

from clients.cli.convert import event, event_json
from clients.cli.event_json import SCHEMA_VERSION, JsonLinesPrinter
from clients.cli.views import Event

ROOT = Path(__file__).resolve().parents[3]


def shipped_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(files("clients.cli").joinpath("run_events.schema.json").read_text())
    return loaded


def test_regenerating_the_schema_and_the_events_page_changes_nothing() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_event_schema.py"), "--check"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_event_of_the_proto_is_in_the_shipped_schema_and_the_doc() -> None:
    oneof = loop_pb2.TurnEvent.DESCRIPTOR.oneofs_by_name["event"]
    names = {field.json_name for field in oneof.fields}
    schema = shipped_schema()
    assert {next(iter(alt["required"])) for alt in schema["oneOf"]} == names
    assert names <= set(schema["properties"])
    doc = (ROOT / "docs" / "events.md").read_text()
    assert all(f"| `{name}` |" in doc for name in names)


def _step_event() -> Event:
    usage = common_pb2.Usage(prompt_tokens=3263, completion_tokens=41, total_tokens=3304, cached_tokens=3072)
    return event(loop_pb2.TurnEvent(seq=9, session_id="s1", turn=1, ts=1.5, model_step_finished=loop_pb2.ModelStepFinished(
        step=1, usage=usage, latency_ms=812.5, finish_reason="tool_calls")))


def test_large_counters_are_printed_as_numbers_and_validate() -> None:
    data = event_json(_step_event())
    assert data["seq"] == 9 and data["modelStepFinished"]["usage"]["promptTokens"] == 3263
    assert data["modelStepFinished"]["usage"]["cachedTokens"] == 3072
    jsonschema.validate(data, shipped_schema())


def test_a_line_with_two_events_or_an_unknown_key_fails_the_schema() -> None:
    data = event_json(_step_event())
    validator = jsonschema.Draft202012Validator(shipped_schema())
    assert not validator.is_valid({**data, "textDelta": {"text": "x"}})
    assert not validator.is_valid({**data, "promptTokens": 1})
    as_strings = json.loads(json.dumps(data).replace("3263", '"3263"'))
    assert not validator.is_valid(as_strings)


def test_only_the_first_line_carries_the_schema_version() -> None:
    out = io.StringIO()
    printer = JsonLinesPrinter(out)
    printer.write(_step_event())
    printer.write(_step_event())
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["schemaVersion"] == SCHEMA_VERSION and "schemaVersion" not in second


def test_a_reader_that_left_makes_the_printer_drop_the_rest_without_raising() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as out:
        printer = JsonLinesPrinter(out)
        printer.write(_step_event())
        assert printer.reader_gone
        printer.write(_step_event())  # dropped, no exception
        out.flush()  # the descriptor now points at /dev/null: a later flush cannot raise
