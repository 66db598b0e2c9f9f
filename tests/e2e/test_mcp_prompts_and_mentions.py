"""A server's prompts and resources in what the user types, through the real CLI, services and our
library MCP server (tests/mcp_servers/library_server.py): ``/library:summarize dune`` runs the
prompt, ``@library:library://guide`` attaches the resource, ``ai-coding mcp complete`` completes a
prompt's argument (completion/complete)."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli, cli_stack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LIBRARY = Path(__file__).resolve().parents[1] / "mcp_servers" / "library_server.py"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    servers = f"mcp:\n  servers:\n  - {{name: library, type: local, command: ['{sys.executable}', '{LIBRARY}']}}\n"
    with cli_stack("aic-mcpin-", [{"text": "the fake model answered", "repeat": "forever"}], ", max_retries: 0", servers) as running:
        deadline = time.monotonic() + 60
        while "connected" not in cli(running.env, "mcp", "status").stdout and time.monotonic() < deadline:
            time.sleep(0.3)
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    return Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))


def last_request(stack: Stack) -> str:
    return json.dumps(stack.model.chat_requests[-1].body["messages"][1:], ensure_ascii=False)


def test_a_server_prompt_typed_as_a_slash_command_is_what_the_model_gets(stack: Stack, workspace: Path) -> None:
    done = cli(stack.env, "run", "-w", str(workspace), "/library:summarize dune style=detailed")
    assert done.returncode == 0, done.stderr
    assert "Summarize the book 'dune' (Dune, by Frank Herbert: a desert planet and its spice.) in a detailed style." \
        in last_request(stack)
    positional = cli(stack.env, "run", "-w", str(workspace), "/library:summarize emma")
    assert positional.returncode == 0, positional.stderr
    assert "Summarize the book 'emma'" in last_request(stack) and "in a brief style" in last_request(stack)


def test_a_bad_prompt_command_is_one_line_that_says_what_to_do(stack: Stack, workspace: Path) -> None:
    seen = len(stack.model.chat_requests)
    missing = cli(stack.env, "run", "-w", str(workspace), "/library:summarize")
    assert missing.returncode == 2 and "missing title; the prompt takes: title=… style=…?" in missing.stderr
    unknown = cli(stack.env, "run", "-w", str(workspace), "/library:nope")
    assert unknown.returncode == 2 and "has no prompt 'nope'" in unknown.stderr
    assert "`ai-coding mcp prompts library`" in unknown.stderr
    assert len(stack.model.chat_requests) == seen  # nothing was sent


def test_a_resource_mention_attaches_the_resource(stack: Stack, workspace: Path) -> None:
    done = cli(stack.env, "run", "-w", str(workspace), "what are the rules? @library:library://guide")
    assert done.returncode == 0, done.stderr
    sent = last_request(stack)
    assert "Lending rules: three books at a time" in sent and "library:library://guide" in sent
    templated = cli(stack.env, "run", "-w", str(workspace), "tell me about @library:library://books/ubik")
    assert templated.returncode == 0 and "reality decays in a spray can" in last_request(stack)


def test_a_prompts_argument_is_completed_by_the_server(stack: Stack) -> None:
    titles = cli(stack.env, "mcp", "complete", "library", "summarize", "title", "d")
    assert titles.returncode == 0 and titles.stdout.split() == ["dune"], titles.stderr
    styles = cli(stack.env, "mcp", "complete", "library", "summarize", "style", "b")
    assert styles.returncode == 0 and styles.stdout.splitlines() == ["brief", "bullet points"]


def test_the_repl_runs_a_server_prompt_and_attaches_a_mentioned_resource(stack: Stack, workspace: Path) -> None:
    pytest.importorskip("pexpect")
    from tests.e2e.test_repl_session import Term

    term = Term(stack, workspace)
    try:
        term.line("/library:summarize ubik style=brief")
        term.expect("the fake model answered")
        assert "Summarize the book 'ubik'" in last_request(stack)
        term.line("and the rules? @library:library://guide")
        term.expect("attached library:library://guide")
        term.expect("the fake model answered")
        assert "Lending rules: three books at a time" in last_request(stack)
        term.line("/library:summarize")
        term.expect("missing title; the prompt takes: title=… style=…?")
    finally:
        term.close()


def test_the_repl_tab_completes_a_prompt_argument_from_the_server(stack: Stack, workspace: Path) -> None:
    pytest.importorskip("pexpect")
    from tests.e2e.test_repl_session import Term

    term = Term(stack, workspace)
    try:
        term.key("/library:summarize title=d")
        term.expect("dune")  # the menu shows what the server suggested
        term.key("\t")
        term.key(" style=brief")
        term.line("")
        term.expect("the fake model answered")
        assert "Summarize the book 'dune' (Dune, by Frank Herbert" in last_request(stack)
    finally:
        term.close()
