"""``ai-coding run ...`` without typer, for the command lines a script or an editor writes most.

Typer and its click core take ~40 ms of a warm ``ai-coding run`` to import and to build the
command (bench/startup.py), a sixth of the whole run. :func:`parse` reads the plain forms of
``run``'s options itself: each option as its own word, the value as the next word, at most one
prompt. Anything else (``--help``, ``--opt=value``, ``-wDIR``, ``--``, an option twice, an unknown
word, a value that is not a number, the session and plan options) returns None and the command
line goes to typer unchanged, which then parses it, and explains a mistake, as it always did.
tests/unit/cli/test_cli_run_fast.py holds the two parsers to the same answers.
"""

from __future__ import annotations

import math

from clients.cli.run_command import RunOptions

FLAGS = {"--json": "as_json", "--auto-approve": "auto_approve", "--verbose": "verbose", "-v": "verbose"}
"""Options without a value, and the field each sets."""
VALUED = {"--workspace": "workspace", "-w": "workspace", "--model": "model", "-m": "model", "--timeout": "timeout"}
"""Options whose value is the next word, and the field each sets."""


def parse(args: list[str]) -> RunOptions | None:
    """``args`` (what follows ``run``) as :class:`RunOptions`, or None when typer should read them."""
    values: dict[str, object] = {}
    prompt: str | None = None
    words = iter(args)
    for word in words:
        if word in FLAGS:
            field = FLAGS[word]
            if field in values:
                return None
            values[field] = True
        elif word in VALUED:
            field = VALUED[word]
            value = next(words, None)
            if field in values or value is None or value.startswith("-"):
                return None  # typer decides what a missing value, or an option in its place, means
            values[field] = value
        elif word == "-" or not word.startswith("-"):
            if prompt is not None:
                return None
            prompt = word
        else:
            return None
    if "timeout" in values:
        try:
            seconds = float(str(values["timeout"]))
        except ValueError:
            return None
        if not math.isfinite(seconds):
            return None
        values["timeout"] = seconds
    return RunOptions(prompt=prompt or "", **values)  # type: ignore[arg-type]


__all__ = ["parse"]
