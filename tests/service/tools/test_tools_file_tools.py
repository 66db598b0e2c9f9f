"""read / write / edit through the real service: paging, limits, the stale-read guard."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ai_coding.v1 import common_pb2

from tests.support.tools_harness import ThreadedToolService


def call(svc: ThreadedToolService, tool: str, **args: object) -> common_pb2.ToolResult:
    return svc.call("s1", tool, json.dumps(args))[1]


def test_read_numbers_lines_and_pages_with_offset_and_limit(service: ThreadedToolService, workspace: Path) -> None:
    (workspace / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = call(service, "read", path="f.txt", offset=3, limit=2)
    assert result.ok
    assert result.output.splitlines()[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "offset=5" in result.output
    assert json.loads(result.data_json)["total_lines"] == 10


def test_binary_files_are_refused(service: ThreadedToolService, workspace: Path) -> None:
    (workspace / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    result = call(service, "read", path="img.png")
    assert not result.ok and result.error.code == "binary_file"


def test_files_over_10_mb_are_refused_with_a_way_forward(service: ThreadedToolService, workspace: Path) -> None:
    with open(workspace / "big.txt", "wb") as handle:
        handle.truncate(10 * 1024 * 1024 + 1)
    result = call(service, "read", path="big.txt")
    assert not result.ok and result.error.code == "file_too_large" and "grep" in result.error.hint


def test_a_missing_file_is_not_found(service: ThreadedToolService) -> None:
    assert call(service, "read", path="nope.txt").error.code == "not_found"


def test_replacing_a_file_never_read_is_refused(service: ThreadedToolService, workspace: Path) -> None:
    (workspace / "a.txt").write_text("original\n")
    result = call(service, "write", path="a.txt", content="clobbered\n")
    assert result.error.code == "never_read" and "Read a.txt first" in result.error.hint
    assert (workspace / "a.txt").read_text() == "original\n"


def test_a_file_changed_after_the_read_is_stale(service: ThreadedToolService, workspace: Path) -> None:
    target = workspace / "a.txt"
    target.write_text("v1\n")
    assert call(service, "read", path="a.txt").ok
    target.write_text("v2 from someone else\n")
    result = call(service, "edit", path="a.txt", old_string="v2", new_string="v3")
    assert result.error.code == "stale_read"
    assert target.read_text() == "v2 from someone else\n"


def test_a_touch_without_a_content_change_is_not_stale(service: ThreadedToolService, workspace: Path) -> None:
    target = workspace / "a.txt"
    target.write_text("same\n")
    call(service, "read", path="a.txt")
    os.utime(target, (1, 1))
    assert call(service, "write", path="a.txt", content="new\n").ok


def test_write_creates_new_files_and_parents_without_a_read(service: ThreadedToolService, workspace: Path) -> None:
    result = call(service, "write", path="pkg/sub/new.py", content="x = 1\n")
    assert result.ok and json.loads(result.data_json)["created"] is True
    assert (workspace / "pkg/sub/new.py").read_text() == "x = 1\n"


def test_successive_edits_after_one_read_work_and_return_a_diff(service: ThreadedToolService,
                                                                 workspace: Path) -> None:
    (workspace / "m.py").write_text("a = 1\nb = 2\n")
    call(service, "read", path="m.py")
    first = call(service, "edit", path="m.py", old_string="a = 1", new_string="a = 10")
    second = call(service, "edit", path="m.py", old_string="b = 2", new_string="b = 20")
    assert first.ok and second.ok and "+b = 20" in second.output
    assert (workspace / "m.py").read_text() == "a = 10\nb = 20\n"


def test_a_failed_edit_shows_the_closest_lines_and_changes_nothing(service: ThreadedToolService,
                                                                    workspace: Path) -> None:
    (workspace / "m.py").write_text("def run():\n    return compute(1)\n")
    call(service, "read", path="m.py")
    result = call(service, "edit", path="m.py", old_string="return compute(2)", new_string="x")
    assert result.error.code == "edit_no_match" and "     2\t    return compute(1)" in result.output
    assert (workspace / "m.py").read_text() == "def run():\n    return compute(1)\n"


def test_an_ambiguous_edit_is_refused_until_replace_all(service: ThreadedToolService, workspace: Path) -> None:
    (workspace / "m.py").write_text("x = 0\nx = 0\n")
    call(service, "read", path="m.py")
    assert call(service, "edit", path="m.py", old_string="x = 0", new_string="x = 1").error.code == "edit_not_unique"
    assert call(service, "edit", path="m.py", old_string="x = 0", new_string="x = 1", replace_all=True).ok
    assert (workspace / "m.py").read_text() == "x = 1\nx = 1\n"


def test_glob_and_grep_answer_through_the_service(service: ThreadedToolService, workspace: Path) -> None:
    (workspace / "a.py").write_text("needle = 1\n")
    assert call(service, "glob", pattern="*.py").output == "a.py"
    assert call(service, "grep", pattern="needle").output == "a.py:1: needle = 1"


def test_list_tools_gives_schemas_and_permissions(service: ThreadedToolService) -> None:
    from ai_coding.v1 import tools_pb2

    specs = {s.name: s for s in service.stub.ListTools(tools_pb2.ListToolsRequest(), timeout=10).tools}
    assert {"read", "write", "edit", "glob", "grep", "bash", "job_start", "job_output", "job_list",
            "job_stop"} <= set(specs)
    assert json.loads(specs["bash"].parameters_json)["required"] == ["command"]
    assert specs["bash"].permission == "warn" and specs["read"].permission == "allow"
    assert specs["job_start"].deferred and specs["read"].parallel_safe and not specs["bash"].parallel_safe


def test_a_dry_run_edit_returns_the_real_diff_and_writes_nothing(service: ThreadedToolService,
                                                                 workspace: Path) -> None:
    (workspace / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    call(service, "read", path="m.py")
    _, preview = service.call("s1", "edit", json.dumps({"path": "m.py", "old_string": "b = 2",
                                                        "new_string": "b = 20"}), dry_run=True)
    assert preview.ok and " a = 1\n-b = 2\n+b = 20\n c = 3" in preview.output
    assert (workspace / "m.py").read_text() == "a = 1\nb = 2\nc = 3\n"
    assert call(service, "edit", path="m.py", old_string="b = 2", new_string="b = 20").ok  # still fresh


def test_a_dry_run_write_applies_the_stale_read_guard(service: ThreadedToolService, workspace: Path) -> None:
    (workspace / "m.py").write_text("x\n")
    _, preview = service.call("s1", "write", json.dumps({"path": "m.py", "content": "y\n"}), dry_run=True)
    assert preview.error.code == "never_read" and (workspace / "m.py").read_text() == "x\n"


def test_a_dry_run_bash_gives_the_policy_verdict_without_running(service: ThreadedToolService,
                                                                 workspace: Path) -> None:
    _, verdict = service.call("s1", "bash", json.dumps({"command": "echo hi > made.txt"}), dry_run=True)
    assert json.loads(verdict.data_json) == {"denied": None, "writes_files": True, "dry_run": True}
    assert not (workspace / "made.txt").exists()
    _, denied = service.call("s1", "bash", json.dumps({"command": "sudo ls"}), dry_run=True)
    assert json.loads(denied.data_json)["denied"]
    _, refused = service.call("s1", "read", json.dumps({"path": "m.py"}), dry_run=True)
    assert refused.error.code == "invalid_arguments"


def test_a_multi_line_edit_of_a_crlf_file_matches_and_keeps_crlf(service: ThreadedToolService,
                                                                  workspace: Path) -> None:
    target = workspace / "win.txt"
    target.write_bytes(b"line1\r\nold value\r\nline3\r\n")
    read = call(service, "read", path="win.txt")
    assert "\r" not in read.output  # what the model sees, and so what it sends back
    result = call(service, "edit", path="win.txt", old_string="old value\nline3", new_string="new value\nline three")
    assert result.ok, result.output
    assert target.read_bytes() == b"line1\r\nnew value\r\nline three\r\n"


def test_writing_over_a_crlf_file_keeps_its_line_endings(service: ThreadedToolService, workspace: Path) -> None:
    target = workspace / "win.txt"
    target.write_bytes(b"a\r\nb\r\n")
    assert call(service, "read", path="win.txt").ok
    assert call(service, "write", path="win.txt", content="a\nb\nc\n").ok
    assert target.read_bytes() == b"a\r\nb\r\nc\r\n"


def test_a_new_file_gets_the_mode_open_would_give_it_and_a_replaced_one_keeps_its_own(
        service: ThreadedToolService, workspace: Path) -> None:
    umask = os.umask(0)
    os.umask(umask)
    assert call(service, "write", path="new.txt", content="x\n").ok
    assert (workspace / "new.txt").stat().st_mode & 0o777 == 0o666 & ~umask
    script = workspace / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o750)
    assert call(service, "read", path="run.sh").ok
    assert call(service, "write", path="run.sh", content="echo bye\n").ok
    assert script.stat().st_mode & 0o777 == 0o750
