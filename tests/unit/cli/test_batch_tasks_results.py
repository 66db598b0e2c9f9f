"""`ai-coding batch`: the tasks file, what a run's JSON lines say, and the summary table (pure),
plus its bad input as one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clients.cli.batch.results import read_results, summary_lines
from clients.cli.batch.runner import diff_stats, run_facts
from clients.cli.batch.tasks import BatchError, Task, parse_tasks, task_at

EXE = str(Path(sys.executable).parent / "ai-coding")
GOOD = {"id": "issue-1", "repo": "https://git.example.com/p.git", "commit": "0123abc", "prompt": "fix it"}


def test_a_tasks_file_parses_into_tasks_in_order() -> None:
    tasks = parse_tasks([GOOD, {**GOOD, "id": "issue-2", "timeout": 60}], "tasks.yaml")
    assert tasks == [Task("issue-1", GOOD["repo"], "0123abc", "fix it"),
                     Task("issue-2", GOOD["repo"], "0123abc", "fix it", 60.0)]
    assert task_at(tasks, 1).id == "issue-2"


@pytest.mark.parametrize(("raw", "message"), [
    ([], "expected a non-empty YAML list"),
    ([{**GOOD, "commit": "main"}], "pin the task to a commit"),
    ([{**GOOD, "id": "../etc"}], "may hold only letters"),
    ([{k: v for k, v in GOOD.items() if k != "prompt"}], "task 0 has no prompt"),
    ([{**GOOD, "branch": "x"}], "unknown key(s) branch"),
    ([GOOD, GOOD], "two tasks have the id 'issue-1'"),
    ([{**GOOD, "timeout": -1}], "timeout -1 is not a number of seconds"),
])
def test_a_bad_tasks_file_is_one_error_naming_the_entry(raw: object, message: str) -> None:
    with pytest.raises(BatchError) as err:
        parse_tasks(raw, "tasks.yaml")
    assert message in str(err.value) and str(err.value).startswith("tasks.yaml")


def test_an_index_past_the_tasks_says_what_completions_should_be() -> None:
    with pytest.raises(BatchError) as err:
        task_at(parse_tasks([GOOD], "t"), 3)
    assert "set the Job's completions to 1" in str(err.value)


def test_the_run_facts_are_the_last_turn_finished_of_the_json_lines() -> None:
    lines = [json.dumps({"seq": 1, "sessionId": "s1", "turnStarted": {"turn": 1}}), "not json",
             json.dumps({"seq": 9, "sessionId": "s1", "turnFinished": {"status": "TURN_STATUS_COMPLETED",
                                                                       "text": "Done."}})]
    facts = run_facts(lines)
    assert (facts.session_id, facts.status, facts.final_text) == ("s1", "TURN_STATUS_COMPLETED", "Done.")
    assert run_facts([]).status == ""


def test_diff_stats_count_files_and_changed_lines_not_headers() -> None:
    patch = ("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n"
             "diff --git a/y b/y\nnew file mode 100644\n--- /dev/null\n+++ b/y\n@@ -0,0 +1 @@\n+y\n")
    assert diff_stats(patch) == (2, 3)


def _result(folder: Path, **fields: object) -> None:
    folder.mkdir(parents=True)
    record = {"index": 0, "id": "t", "exitStatus": 0, "status": "TURN_STATUS_COMPLETED", "finalText": "ok",
              "filesChanged": 1, "linesChanged": 2, "sessionId": "s", **fields}
    (folder / "result.json").write_text(json.dumps(record))


def test_the_summary_has_a_row_per_task_folder_and_counts_the_missing(tmp_path: Path) -> None:
    _result(tmp_path / "task-1", index=1, id="b", exitStatus=6, status="TURN_STATUS_MAX_ITERATIONS", finalText="x\ny")
    _result(tmp_path / "task-0", index=0, id="a")
    (tmp_path / "task-2").mkdir()
    lines = summary_lines(read_results(tmp_path))
    assert [line.split()[:4] for line in lines[1:4]] == [["0", "a", "0", "completed"], ["1", "b", "6", "max_iterations"],
                                                         ["?", "task-2", "-", "no"]]
    assert lines[2].endswith("x y")
    assert lines[-1] == "3 task(s): 1 completed, 1 not completed, 1 without a result"


def test_collect_of_a_folder_that_is_not_there_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run([EXE, "batch", "collect", str(tmp_path / "nope")], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"ai-coding batch collect: {tmp_path / 'nope'} is not a directory; pass the folder the results were copied to"]
