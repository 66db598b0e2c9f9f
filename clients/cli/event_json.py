"""The ``run --json`` event stream: one JSON object per line, versioned.

Each line is a ``TurnEvent`` in the protobuf JSON mapping (lowerCamelCase keys, enum
values by name, fields at their default value left out) except that 64-bit integers
are JSON numbers, not strings. The first line also carries ``schemaVersion``. The
schema (``run_events.schema.json`` beside this module, described in docs/events.md)
is generated from the proto by ``scripts/gen_event_schema.py``; a test fails when the
two disagree.

A reader that leaves early (``run --json | head -1``) is not an error: the rest of
the stream is dropped, the turn still runs to its end, and the process exits with
the turn's code without running the interpreter's shutdown (see ``leave_if_reader_gone``).
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

if TYPE_CHECKING:
    from clients.cli.views import Event

SCHEMA_VERSION = 1
"""Bumped when a key changes meaning or goes away; new events and fields keep the version."""

_INT64 = frozenset({FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT64,
                    FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64})


def message_json(message: Message) -> dict[str, Any]:
    """A protobuf message in the JSON mapping, 64-bit integers as numbers (convert.event_json uses it)."""
    data = MessageToDict(message)
    _numbers(message.DESCRIPTOR, data)
    return data


def _numbers(descriptor: Any, data: dict[str, Any]) -> None:
    """Turn the 64-bit integer strings of ``data`` (a message of ``descriptor``) into ints."""
    for field in descriptor.fields:
        if field.json_name not in data:
            continue
        value = data[field.json_name]
        repeated = field.is_repeated
        if field.message_type is not None:
            for item in value if repeated else [value]:
                _numbers(field.message_type, item)
        elif field.type in _INT64:
            data[field.json_name] = [int(v) for v in value] if repeated else int(value)


class JsonLinesPrinter:
    """Prints events to ``out``; the first one gets ``schemaVersion``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.first = True
        self.reader_gone = False

    def write(self, event: Event) -> None:
        from clients.cli.convert import event_json

        if self.reader_gone:
            return
        data = event_json(event)
        if self.first:
            data = {**data, "schemaVersion": SCHEMA_VERSION}
            self.first = False
        try:
            self.out.write(json.dumps(data, ensure_ascii=False) + "\n")
            self.out.flush()
        except BrokenPipeError:
            self._reader_left()

    def _reader_left(self) -> None:
        """Point the stream's descriptor at /dev/null: the bytes still buffered, and any
        later flush, go nowhere instead of raising again."""
        self.reader_gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self.out.fileno())
        finally:
            os.close(devnull)

    def leave_if_reader_gone(self, exit_code: int) -> None:
        """After the reader left, exit at once with ``exit_code``.

        ``os._exit`` skips the interpreter's shutdown (atexit handlers, flushing, waiting on
        threads): a process whose reader left was once found hung there, blocked on a lock,
        and nothing remains to do at that point (the turn has ended, stderr is flushed)."""
        if self.reader_gone:
            sys.stderr.flush()
            os._exit(exit_code)
