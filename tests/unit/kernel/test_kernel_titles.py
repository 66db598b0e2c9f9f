"""The one title function of a tool call, shared by the loop and the client."""

from __future__ import annotations

from services.kernel.titles import TARGET_CHARS, tool_title


def test_a_title_is_the_verb_and_the_first_line_of_the_target() -> None:
    assert tool_title("bash", '{"command": "pytest -q\\necho"}') == "Running · pytest -q"
    assert tool_title("bash", {"command": "\n  make test  \nmore"}) == "Running · make test"
    assert tool_title("read", '{"path": "src/a.py"}') == "Reading · src/a.py"
    assert tool_title("ask_user", {"question": "Which one?"}) == "Asking · Which one?"


def test_a_call_without_a_target_or_with_garbage_arguments_is_titled_by_its_verb_or_name() -> None:
    assert tool_title("mystery", "not json") == "mystery"
    assert tool_title("bash", "[1, 2]") == "Running"
    assert tool_title("tool_search", {}) == "Loading tools"
    assert tool_title("docs_lookup", {"query": "grpc aio"}) == "docs_lookup · grpc aio"


def test_a_long_target_is_cut_with_an_ellipsis() -> None:
    title = tool_title("bash", {"command": "x" * 500})
    assert len(title) == len("Running · ") + TARGET_CHARS
    assert title.endswith("…")
