"""What /memory, /mcp and `ai-coding memory|mcp` print: grouping, id prefixes, server rows, y/N, arguments."""

from __future__ import annotations

from typing import Any

import pytest

from clients.cli import convert, service_views
from clients.cli import services_view as view
from clients.cli.repl.service_commands import PendingForget, confirm_prompt, parse_memory_args, style_overview
from clients.cli.slash import completions, help_text, subcommand_completions


def note(id: str, text: str, **fields: Any) -> service_views.Note:
    return service_views.Note(id=id, text=text, **{"kind": "fact", "importance": 2, **fields})


def server(name: str, state: int, **fields: Any) -> service_views.ServerStatus:
    return service_views.ServerStatus(name=name, state=state, **{"attempts": 1, "type": "local", **fields})


def test_notes_are_grouped_by_kind_with_counts_pins_scenes_and_evidence() -> None:
    notes = [
        note("n1", "uses pytest", kind="fact", evidence="tool", scene="testing"),
        note("n2", "prefer tabs", kind="preference", pinned=True, importance=4),
        note("n3", "api is v2", kind="fact", evidence="model", scene="testing"),
        note("n4", "db is sqlite", kind="decision", evidence="tool", scene="storage"),
    ]
    lines = view.overview_lines(notes)
    assert lines[0] == "decision (1)"
    assert lines.index("fact (2)") < lines.index("preference (1)")
    assert "  n2  *4 prefer tabs" in lines
    assert "  n1   2 [testing] uses pytest" in lines
    assert "scenes: storage=1, testing=2" in lines
    assert lines[-1] == "evidence: tool=2 model=1 none=1"


def test_without_scenes_there_is_no_scenes_line_and_no_notes_says_so() -> None:
    assert not any(line.startswith("scenes:") for line in view.overview_lines([note("a", "x")]))
    assert view.overview_lines([]) == ["memory holds no notes for this workspace"]


def test_overview_styles_headers_bold_rows_plain_and_summaries_dim() -> None:
    styled = dict(style_overview(["fact (1)", "  a   2 x", "evidence: none=1"]))
    assert styled == {"fact (1)": "bold", "  a   2 x": "", "evidence: none=1": "dim"}


def test_an_id_prefix_names_one_note_or_lists_the_candidates() -> None:
    notes = [note("abc123", "one"), note("abd456", "two"), note("ab", "short")]
    assert view.match_note(notes, "abc").note is notes[0]
    assert view.match_note(notes, "abd4").note is notes[1]
    several = view.match_note(notes[:2], "ab")
    assert several.note is None and [n.id for n in several.candidates] == ["abc123", "abd456"]
    assert view.match_note(notes, "ab").note is notes[2]  # an exact id wins over longer ones
    assert view.match_note(notes, "zz") == view.IdMatch(None, [])
    assert view.match_note(notes, "  ").note is None


@pytest.mark.parametrize(("answer", "yes"), [("y", True), ("YES", True), (" y ", True), ("", False),
                                             ("n", False), ("yep", False), ("no", False)])
def test_only_y_or_yes_confirms_and_enter_alone_is_no(answer: str, yes: bool) -> None:
    assert view.is_yes(answer) is yes


def test_the_forget_question_shows_the_note_and_says_enter_is_no() -> None:
    assert confirm_prompt(PendingForget("n1", "keep me")) == "forget n1: keep me? [y/N]"


@pytest.mark.parametrize(("args", "parsed"), [
    ("", ("list", "")), ("  ", ("list", "")), ("search sqlite wal", ("search", "sqlite wal")),
    ("SHOW abc", ("show", "abc")), ("pin abc", ("pin", "abc")), ("unpin abc", ("unpin", "abc")),
    ("forget abc", ("forget", "abc")), ("which database", ("search", "which database")),
])
def test_memory_arguments_pick_the_subcommand_and_bare_words_search(args: str, parsed: tuple[str, str]) -> None:
    assert parse_memory_args(args) == parsed


def test_server_rows_show_state_tools_reason_and_the_login_hint() -> None:
    connected = view.server_line(server("demo", 2, tool_count=7))
    assert connected.split() == ["demo", "local", "connected", "7", "tools"]
    failed = view.server_line(server("broken", 4, reason="command not found: nope", next_retry_in_s=8.2))
    assert "failed" in failed and failed.endswith("command not found: nope (retry in 8s)")
    auth = view.server_line(server("remote", 5, type="remote", reason="sign-in required"))
    assert "needs_auth" in auth and auth.endswith("(run `ai-coding mcp login remote`)")
    assert "disabled" in view.server_line(server("off", 6))
    assert view.state_name(server("x", 99)) == "unknown"
    assert view.server_lines([]) == ["no MCP servers configured (add one with `ai-coding mcp add`)"]


def test_a_retried_server_has_settled_after_a_new_attempt_that_is_not_transient() -> None:
    before = server("s", 4, attempts=3)
    assert not view.retry_settled(before, server("s", 4, attempts=3))  # the retry has not begun
    assert not view.retry_settled(before, server("s", 1, attempts=4))  # still connecting
    assert view.retry_settled(before, server("s", 2, attempts=4))
    assert view.retry_settled(before, server("s", 4, attempts=4))
    assert view.retry_settled(before, server("s", 6, attempts=3))  # disabled: never attempts
    assert view.retry_settled(before, server("s", 5, attempts=3))  # waits for a login instead


def test_memory_search_asks_not_to_count_as_a_use() -> None:
    request = convert.recall_request("/ws", "sqlite", k=3)
    assert request.skip_hit_count is True and request.query == "sqlite" and request.k == 3


def test_subcommands_complete_after_the_command_and_help_names_them() -> None:
    assert [s for s, _ in subcommand_completions("memory", "")] == [
        "search <words>", "show <id>", "pin <id>", "unpin <id>", "forget <id>"]
    assert [s for s, _ in subcommand_completions("memory", "f")] == ["forget <id>"]
    assert [s for s, _ in subcommand_completions("mcp", "r")] == ["retry <name>"]
    assert subcommand_completions("status", "") == []
    assert [s for s, _ in completions("m")] == ["/model [name]", "/memory [search|show|pin|unpin|forget]",
                                                "/mcp [retry <name>]"]
    text = help_text()
    assert "/memory [search|show|pin|unpin|forget]" in text and "/mcp [retry <name>]" in text


def test_an_editors_servers_are_listed_under_their_session_never_as_the_users() -> None:
    mine, theirs = server("ed-aaaaaa", 2, session_id="s-mine"), server("ed-bbbbbb", 2, session_id="s-other")
    servers = [mine, server("demo", 2), theirs]
    lines = view.server_lines(servers)
    assert lines[0].split()[0] == "demo"  # the user's own come first, unmarked
    assert lines.index("session s-mine's editor servers (from ai-coding acp, for that session alone):") \
        == lines.index(view.server_line(mine)) - 1
    assert lines.index("session s-other's editor servers (from ai-coding acp, for that session alone):") \
        == lines.index(view.server_line(theirs)) - 1
    in_repl = view.server_lines(servers, "s-mine", others=False)  # the REPL of session s-mine
    assert in_repl[1] == "this session's editor servers (from ai-coding acp, for this session alone):"
    assert view.server_line(mine) in in_repl and view.server_line(theirs) not in in_repl
    assert in_repl[-1] == "(1 editor server of other sessions: `ai-coding mcp status` lists them)"
    assert view.server_lines([theirs], "s-mine", others=False)[0].startswith("no MCP servers of your own")
