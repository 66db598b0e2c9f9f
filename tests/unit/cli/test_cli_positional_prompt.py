"""The command forms Claude Code users type: a positional prompt opens the REPL with it."""

from __future__ import annotations

from clients.cli.headless import lift_prompt, rewrite_argv

COMMANDS = ["run", "status", "sessions", "up"]


def lifted(*args: str) -> list[str]:
    return lift_prompt(rewrite_argv(list(args), COMMANDS), COMMANDS)


def test_a_prompt_alone_becomes_the_first_message() -> None:
    assert lifted("fix the bug") == ["--first-message=fix the bug"]
    assert lifted("fix", "the", "bug") == ["--first-message=fix the bug"]


def test_continue_and_resume_keep_their_session_and_take_the_prompt() -> None:
    assert lifted("-c", "now the tests") == ["-c", "--first-message=now the tests"]
    assert lifted("-r", "0113e0", "go on") == ["-r", "0113e0", "--first-message=go on"]
    assert lifted("--resume=0113e0", "go on") == ["--resume=0113e0", "--first-message=go on"]
    assert lifted("-w", "/ws", "go on", "--skills", "/s") == ["-w", "/ws", "--first-message=go on", "--skills", "/s"]


def test_a_command_name_stays_a_command_and_print_mode_stays_headless() -> None:
    assert lifted("status") == ["status"]
    assert lifted("-w", "/ws", "sessions", "list") == ["-w", "/ws", "sessions", "list"]
    assert lifted("-p", "fix it") == ["run", "fix it"]
    assert lifted("-c", "-p", "go on") == ["run", "-c", "go on"]
    assert lifted("-r") == ["--resume=@list"]
