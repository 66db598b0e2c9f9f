"""A command line that starts with a command's name runs an app holding that command alone
(typer builds a click command of every registered function on each start); it answers as the
whole app does, and any other command line gets the whole app."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from clients.cli.main import _command_name, app, for_command_line


def _names(which: typer.Typer) -> list[str]:
    return [_command_name(info) for info in which.registered_commands] + \
        [str(info.name) for info in which.registered_groups]


@pytest.mark.parametrize("args", [["run", "--help"], ["up", "--help"], ["status", "--help"], ["serve", "nope"],
                                  ["run", "--timeout", "-1", "x"], ["run", "--bogus"], ["demo", "--help"]])
def test_the_one_command_app_answers_as_the_whole_app(args: list[str]) -> None:
    only = for_command_line(args)
    assert only is not app and _names(only) == [args[0]]
    runner = CliRunner()
    alone = runner.invoke(only, args, env={"COLUMNS": "100"})
    whole = runner.invoke(app, args, env={"COLUMNS": "100"})
    assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
    assert len(_names(app)) > 10  # the whole app was not touched


@pytest.mark.parametrize("args", [[], ["--help"], ["-w", "/tmp", "run", "x"], ["fix the bug"], ["-p", "x"],
                                  ["no-such-command"]])
def test_other_command_lines_get_the_whole_app(args: list[str]) -> None:
    assert for_command_line(args) is app
