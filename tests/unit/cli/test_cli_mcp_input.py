"""Reading ``/server:prompt args`` and ``@server:uri`` out of what the user typed."""

from __future__ import annotations

import pytest

from clients.cli import mcp_input
from clients.cli.mcp_input import PromptArg, PromptCommand


def test_a_prompt_command_is_server_colon_prompt_then_its_arguments() -> None:
    assert mcp_input.prompt_command("/library:summarize dune style=brief") == PromptCommand(
        "library", "summarize", "dune style=brief")
    assert mcp_input.prompt_command("/help") is None and mcp_input.prompt_command("see /a:b") is None


def test_resource_mentions_need_a_server_and_a_uri_with_a_scheme() -> None:
    text = "compare @library:library://guide, @notes:file:///tmp/x.txt and @pytest.fixture (and @library:library://guide)"
    assert mcp_input.resource_mentions(text) == [("library", "library://guide"), ("notes", "file:///tmp/x.txt")]
    assert mcp_input.resource_mentions("mail me at a@b.c or @calc.py") == []


DECLARED = [PromptArg("title", True), PromptArg("style")]


def test_arguments_by_name_or_in_declared_order_and_quoted_values() -> None:
    assert mcp_input.prompt_arguments('emma style="bullet points"', DECLARED) == {
        "title": "emma", "style": "bullet points"}
    assert mcp_input.prompt_arguments("style=brief dune", DECLARED) == {"style": "brief", "title": "dune"}


@pytest.mark.parametrize(("args", "says"), [
    ("", "missing title"), ("a b c", "too many arguments"), ("colour=red", "no argument 'colour'"),
    ('"open', "quote values with spaces"),
])
def test_bad_arguments_say_what_the_prompt_takes(args: str, says: str) -> None:
    with pytest.raises(mcp_input.McpInputError, match=says):
        mcp_input.prompt_arguments(args, DECLARED)


def test_the_argument_being_typed_is_the_last_key_value_word() -> None:
    assert mcp_input.argument_being_typed("/library:summarize dune style=b") == ("library", "summarize", "style", "b")
    assert mcp_input.argument_being_typed("/library:summarize title=") == ("library", "summarize", "title", "")
    assert mcp_input.argument_being_typed("/library:summarize dune") is None
    assert mcp_input.argument_being_typed("/mcp retry x=y") is None



@pytest.mark.parametrize(("text", "may"), [
    ("/library:summarize dune style=brief", True), ("/srv:p", True), ("   /srv:p", True),
    ("read @library:library://guide please", True), ("@a:b://c", True), ("see @x.y:file:///etc/hosts", True),
    ("/a_b:c-d.e\nmore lines", True), ("/help", True), ("a@b:c//d", False),
    ("fix the failing test", False), ("email me@example.com", False), ("see https://example.com", False),
    ("@file.py", False), ("", False),
])
def test_run_skips_mcp_input_only_for_text_it_would_not_expand(text: str, may: bool) -> None:
    """`ai-coding run` imports this module only when may_name_mcp says the text could need it."""
    from clients.cli.run_command import may_name_mcp

    assert may_name_mcp(text) is may
    if mcp_input.wants_gateway(text):
        assert may
