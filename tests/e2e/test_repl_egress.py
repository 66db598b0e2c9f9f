"""A sandboxed command's connection to a host the allow-list does not name, approved (and refused) in
the real REPL in tmux against the services `ai-coding up` starts: real bwrap, real curl through the
egress proxy, an origin on 127.0.0.1 the user config pins as asked.test (a pin is an address, not an
allow-list entry). `/permissions auto` approves the bash call; the network approval is still asked."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_repl_session import Term, _session_id
from tests.support.cli_stack import Stack, cli_stack
from tests.support.egress_sites import SECRET_PAGE, Origin, served
from tests.support.tmux_repl import TmuxRepl

pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None or shutil.which("bwrap") is None,
                                reason="tmux and bwrap are installed by scripts/setup_tests.sh")


@pytest.fixture(scope="module")
def web() -> Iterator[Origin]:
    yield from served()


@pytest.fixture(scope="module")
def stack(web: Origin) -> Iterator[Stack]:
    config = ("tools: {sandbox: {network: proxy, allow_domains: []}}\n"
              f"net: {{pinned_hosts: {{asked.test: '127.0.0.1:{web.port}'}}}}\n")
    with cli_stack("aic-regress-", [{"text": "unused", "repeat": "forever"}], extra_config=config) as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    return Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))


@pytest.fixture
def repl(stack: Stack, workspace: Path) -> Iterator[TmuxRepl]:
    term = TmuxRepl(stack, workspace)
    term.wait_for("/help for commands")
    term.line("/permissions auto")
    term.wait_for("auto")
    yield term
    term.close()


def _fetch(stack: Stack, web: Origin) -> None:
    command = f"curl -sS --max-time 60 http://asked.test:{web.port}/hello"
    stack.model.load_script({"order": "first_match", "steps": [
        {"match": SECRET_PAGE.decode(), "text": "The page says hello."},
        {"match": "not in tools.sandbox.allow_domains", "text": "The proxy refused the host."},
        {"match": "fetch it", "tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
    ]})


def test_allow_once_in_the_repl_lets_the_sandboxed_curl_through(stack: Stack, web: Origin, repl: TmuxRepl) -> None:
    _fetch(stack, web)
    before = len(web.paths())
    repl.line("fetch it")
    screen = repl.wait_for("? approve network")
    assert f"bash wants to connect to asked.test:{web.port} (HTTP GET)" in screen
    assert f"add `- asked.test:{web.port}` under tools.sandbox.allow_domains" in screen
    repl.line("yes")
    screen = repl.wait_for("● completed")
    assert "→ allowed once" in screen and "The page says hello." in screen
    assert web.paths()[before:] == ["/hello"]


def test_deny_in_the_repl_keeps_the_host_refused(stack: Stack, web: Origin, repl: TmuxRepl) -> None:
    _fetch(stack, web)
    before = len(web.paths())
    repl.line("fetch it")
    repl.wait_for("? approve network")
    repl.line("no")
    screen = repl.wait_for("● completed")
    assert "→ denied" in screen and "The proxy refused the host." in screen
    assert web.paths()[before:] == []


def test_allow_for_the_session_answered_from_attach_holds_for_the_next_command(
        stack: Stack, web: Origin, repl: TmuxRepl, workspace: Path) -> None:
    _fetch(stack, web)
    before = len(web.paths())
    repl.line("fetch it")
    screen = repl.wait_for("? approve network")
    other = Term(stack, workspace, "attach", _session_id(screen))
    try:
        other.expect("approve? [y/a/n/s]")
        other.key("a")
        other.expect("→ allowed for this session")
    finally:
        other.close()
    screen = repl.wait_for("● completed")
    assert "→ allowed for this session" in screen and "The page says hello." in screen
    _fetch(stack, web)
    repl.line("fetch it")  # the same host again in this session: not asked
    screen = repl.wait_for("● completed", after=1)
    assert screen.count("? approve network") == 1 and screen.count("The page says hello.") == 2
    assert web.paths()[before:] == ["/hello", "/hello"]
