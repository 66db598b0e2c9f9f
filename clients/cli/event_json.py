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
from typing import TYPE_CHECKING, TextIO

from clients.cli.convert import event_json

if TYPE_CHECKING:
    from clients.cli.views import Event

SCHEMA_VERSION = 1
"""Bumped when a key changes meaning or goes away; new events and fields keep the version."""

class JsonLinesPrinter:
    """Prints events to ``out``; the first one gets ``schemaVersion``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.first = True
        self.reader_gone = False

    def write(self, event: Event) -> None:
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
