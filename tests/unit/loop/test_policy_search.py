from __future__ import annotations

from services.loop.policy.search import (
    SEEN_CAP,
    LadderLimits,
    SearchLadder,
    evidence_keys,
    search_gate_message,
)


def novel_reads(ladder: SearchLadder, n: int, start: int = 0) -> None:
    for k in range(start, start + n):
        ladder.observe("read", True, {"path": f"f{k}.py"}, f"content {k}")


def test_four_successful_searches_in_a_row_reach_l1() -> None:
    ladder = SearchLadder()
    novel_reads(ladder, 3)
    assert ladder.check(3) is None
    novel_reads(ladder, 1, 3)
    signal = ladder.check(4)
    assert signal is not None and signal.level == 1 and signal.streak == 4
    assert not signal.unconverged


def test_six_searches_reach_l2_and_the_count_alone_never_forces_a_finish_by_default() -> None:
    ladder = SearchLadder()
    novel_reads(ladder, 6)
    signal = ladder.check(6)
    assert signal is not None and signal.level == 2
    novel_reads(ladder, 30, 6)
    assert ladder.level()[0] == 2, "L3 by count is off by default (search_streak_l3 = 0)"


def test_the_count_based_l3_can_be_turned_on() -> None:
    ladder = SearchLadder(LadderLimits(search_streak_l3=8))
    novel_reads(ladder, 8)
    signal = ladder.check(8)
    assert signal is not None and signal.level == 3 and signal.unconverged
    assert signal.reason == "search unconverged"


def test_a_successful_action_resets_the_streak_and_the_evidence() -> None:
    ladder = SearchLadder()
    novel_reads(ladder, 5)
    ladder.observe("edit", True)
    assert (ladder.streak, ladder.stale_streak, len(ladder.seen)) == (0, 0, 0)
    assert ladder.check(6) is None


def test_failed_calls_and_bookkeeping_tools_change_nothing() -> None:
    ladder = SearchLadder()
    novel_reads(ladder, 3)
    ladder.observe("read", False, {"path": "x"}, "")
    ladder.observe("edit", False)
    ladder.observe("todo_write", True)
    ladder.observe("ask_user", True)
    assert ladder.streak == 3


def test_a_user_message_resets_the_ladder() -> None:
    ladder = SearchLadder()
    novel_reads(ladder, 5)
    ladder.user_message()
    assert ladder.streak == 0 and not ladder.seen


def test_rereading_the_same_evidence_grows_the_stale_streak() -> None:
    ladder = SearchLadder(LadderLimits(search_streak_threshold=100, search_streak_l2=100))
    ladder.observe("read", True, {"path": "a.py"}, "same")
    for _ in range(3):
        ladder.observe("read", True, {"path": "a.py"}, "same")
    assert ladder.stale_streak == 3
    signal = ladder.check(4)
    assert signal is not None and signal.level == 1 and "no new evidence" in signal.reason


def test_stale_six_with_two_nonempty_repeats_forces_l3() -> None:
    ladder = SearchLadder()
    ladder.observe("grep", True, {"pattern": "foo"}, "a.py:3: foo()\nb.py:9: foo")
    for _ in range(6):
        ladder.observe("grep", True, {"pattern": "foo("}, "b.py:9: foo\na.py:3: foo() # trimmed differently")
    signal = ladder.check(7)
    assert signal is not None and signal.level == 3 and signal.unconverged
    assert signal.repeated >= 2 and signal.stale_streak == 6


def test_repeated_empty_results_alone_do_not_force_l3() -> None:
    ladder = SearchLadder()
    for _ in range(8):
        ladder.observe("grep", True, {"pattern": "nothing", "path": "src"}, "(no matches)")
    assert ladder.stale_streak == 7
    assert ladder.level()[0] == 2


def test_a_new_finding_resets_the_stale_streak_and_counts_as_novel() -> None:
    ladder = SearchLadder()
    ladder.observe("read", True, {"path": "a"}, "x")
    ladder.observe("read", True, {"path": "a"}, "x")
    assert ladder.stale_streak == 1
    ladder.observe("read", True, {"path": "b"}, "y")
    assert (ladder.stale_streak, ladder.novel) == (0, 2)


def test_grep_evidence_is_path_and_line_only() -> None:
    one = evidence_keys("grep", {}, "a.py:3: " + "x" * 400)
    two = evidence_keys("grep", {}, "a.py:3: " + "x" * 300 + " [...]")
    assert one == two == (["grep:a.py:3"], False)


def test_empty_grep_and_glob_results_do_not_collide() -> None:
    g = evidence_keys("grep", {"path": "src"}, "No matches.")
    f = evidence_keys("glob", {"path": "src"}, "No files match *.rs.")
    assert g == (["grep:nomatch@src"], True)
    assert f == (["glob:nomatch@src"], True)


def test_glob_evidence_ignores_the_mtime_order() -> None:
    assert evidence_keys("glob", {}, "b.py\na.py") == evidence_keys("glob", {}, "a.py\nb.py")


def test_search_tools_that_echo_the_query_are_neutral() -> None:
    assert evidence_keys("memory_search", {"query": "x"}, "results for x") is None
    ladder = SearchLadder()
    for n in range(5):
        ladder.observe("memory_search", True, {"query": f"q{n}"}, "same")
    assert ladder.streak == 5 and ladder.stale_streak == 0


def test_the_seen_set_is_cleared_not_evicted_when_full() -> None:
    ladder = SearchLadder()
    novel_reads(ladder, SEEN_CAP)
    assert len(ladder.seen) == SEEN_CAP
    ladder.observe("read", True, {"path": "new"}, "brand new")
    assert len(ladder.seen) == 1


def test_the_same_level_speaks_again_only_after_another_l1_span() -> None:
    ladder = SearchLadder(LadderLimits(search_streak_l2=100, stale_streak_l2=100))
    novel_reads(ladder, 4)
    assert ladder.check(1) is not None
    novel_reads(ladder, 3, 4)
    assert ladder.check(2) is None
    novel_reads(ladder, 1, 7)
    assert ladder.check(3) is not None


def test_the_ladder_is_silent_in_a_readonly_posture_and_when_turned_off() -> None:
    ladder = SearchLadder()
    novel_reads(ladder, 6)
    assert ladder.check(6, readonly_posture=True) is None
    off = SearchLadder(LadderLimits(search_streak_threshold=0))
    novel_reads(off, 20)
    assert off.check(20) is None


def test_l2_message_carries_the_static_check_output_or_the_command_to_run() -> None:
    ladder = SearchLadder()
    novel_reads(ladder, 6)
    signal = ladder.check(6)
    assert signal is not None
    assert "E501 line too long" in search_gate_message(signal, static_check="x.py:1: E501 line too long")
    assert "ruff check ." in search_gate_message(signal, commands=("ruff check .",))
    assert search_gate_message(signal).startswith("[search-gate]")


def test_empty_job_output_is_keyed_by_its_job() -> None:
    assert evidence_keys("job_output", {"job_id": "j7"}, "") == (["job_output:empty@j7"], True)
    assert evidence_keys("webfetch", {"url": "https://x"}, " ") == (["webfetch:empty@https://x"], True)
