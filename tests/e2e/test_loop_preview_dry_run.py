"""Approval previews of write/edit come from the real tools service's dry run (real loop, real tools
service, fake model): the real diff with hunk line numbers, a warning when the call cannot apply, and a
marked fallback when the tools service does not answer."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from ai_coding.v1 import loop_pb2

from tests.service.loop.harness import (
    Conversation,
    LoopStack,
    fake,
    finished,
    make_stack,
    status_name,
    workspace,
)

__all__ = ["fake", "make_stack", "workspace"]

BIG = "".join(f"value_{n} = {n}\n" for n in range(1, 201))


def approve_all(snapshots: list[str], path: Path) -> Callable[[loop_pb2.TurnEvent, Conversation], None]:
    """Allow every approval; record the file as it is while the user is being asked."""
    def on_event(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "approval_requested":
            snapshots.append(path.read_text() if path.exists() else "<missing>")
            conv.send(loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(
                request_id=event.approval_requested.request_id, decision=loop_pb2.APPROVAL_DECISION_ALLOW_ONCE)))
    return on_event


def previews(events: list[loop_pb2.TurnEvent]) -> list[str]:
    return [e.approval_requested.preview for e in events if e.WhichOneof("event") == "approval_requested"]


def results(events: list[loop_pb2.TurnEvent]) -> list[loop_pb2.ToolFinished]:
    return [e.tool_finished for e in events if e.WhichOneof("event") == "tool_finished"]


def run(stack: LoopStack, text: str, snapshots: list[str], path: Path) -> list[loop_pb2.TurnEvent]:
    sid = stack.open(auto_approve=False, interactive=True).session_id
    return stack.start(sid, text).drain(approve_all(snapshots, path))


def test_an_edit_of_a_200_line_file_previews_the_real_hunk_with_line_numbers_and_context(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    target = workspace / "big.py"
    target.write_text(BIG)
    stack = make_stack([
        {"match": "bump", "tool_calls": [{"name": "read", "arguments": {"path": "big.py"}}]},
        {"match": "value_200", "tool_calls": [{"name": "edit", "arguments": {
            "path": "big.py", "old_string": "value_120 = 120\n", "new_string": "value_120 = 121\n"}}]},
        {"match": "Edited", "text": "Bumped."},
    ], with_tools=True)
    snapshots: list[str] = []
    events = run(stack, "bump value 120", snapshots, target)
    assert status_name(finished(events)) == "completed", stack.fake.errors
    [preview] = previews(events)
    lines = preview.split("\n")
    assert lines[:3] == ["--- a/big.py", "+++ b/big.py", "@@ -117,7 +117,7 @@"]
    assert lines[3:] == [" value_117 = 117", " value_118 = 118", " value_119 = 119", "-value_120 = 120",
                         "+value_120 = 121", " value_121 = 121", " value_122 = 122", " value_123 = 123"]
    assert snapshots == [BIG]  # the dry run wrote nothing; the user was asked before any change
    assert target.read_text() == BIG.replace("value_120 = 120\n", "value_120 = 121\n")


def test_a_write_over_an_existing_file_previews_the_lines_it_removes(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("keep me\nold idea one\nold idea two\n")
    stack = make_stack([
        {"match": "rewrite", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"match": "old idea two", "tool_calls": [{"name": "write", "arguments": {
            "path": "notes.txt", "content": "keep me\nnew idea\n"}}]},
        {"match": "notes.txt", "text": "Rewritten."},
    ], with_tools=True)
    snapshots: list[str] = []
    events = run(stack, "rewrite the notes", snapshots, target)
    assert status_name(finished(events)) == "completed", stack.fake.errors
    [preview] = previews(events)
    lines = preview.split("\n")
    assert lines[0] == "--- a/notes.txt" and lines[2].startswith("@@ -1,3 +1,2 @@")
    assert {"-old idea one", "-old idea two", "+new idea", " keep me"} <= set(lines)
    assert snapshots == ["keep me\nold idea one\nold idea two\n"]
    assert target.read_text() == "keep me\nnew idea\n"


def test_an_edit_whose_old_string_is_absent_is_previewed_with_a_warning(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    target = workspace / "big.py"
    target.write_text(BIG)
    stack = make_stack([
        {"match": "rename", "tool_calls": [{"name": "read", "arguments": {"path": "big.py"}}]},
        {"match": "value_200", "tool_calls": [{"name": "edit", "arguments": {
            "path": "big.py", "old_string": "value_999 = 999\n", "new_string": "value_999 = 0\n"}}]},
        {"match": "edit_no_match", "text": "That line does not exist."},
    ], with_tools=True)
    snapshots: list[str] = []
    events = run(stack, "rename value 999", snapshots, target)
    assert status_name(finished(events)) == "completed", stack.fake.errors
    [preview] = previews(events)
    assert preview.startswith("⚠ this edit will fail: edit_no_match: old_string was not found in big.py")
    assert "-value_999 = 999" in preview  # the intended change is still shown
    assert [r.result.error.code for r in results(events)] == ["", "edit_no_match"]  # as the preview said
    assert target.read_text() == BIG


def test_an_edit_of_a_file_never_read_is_previewed_with_a_warning(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    target = workspace / "big.py"
    target.write_text(BIG)
    stack = make_stack([
        {"match": "blind", "tool_calls": [{"name": "edit", "arguments": {
            "path": "big.py", "old_string": "value_1 = 1\n", "new_string": "value_1 = 0\n"}}]},
        {"match": "never_read", "text": "I must read it first."},
    ], with_tools=True)
    events = run(stack, "blind edit", [], target)
    assert status_name(finished(events)) == "completed", stack.fake.errors
    [preview] = previews(events)
    assert preview.startswith("⚠ this edit will fail: never_read: big.py exists but was not read")


def test_with_the_tools_service_stopped_the_preview_falls_back_and_the_turn_completes(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "note", "tool_calls": [{"name": "write", "arguments": {"path": "n.txt", "content": "hello\n"}}]},
        {"match": "tool_service_unavailable", "text": "The tool service is down; nothing was written."},
    ], with_tools=True)
    sid = stack.open(auto_approve=False, interactive=True).session_id  # the catalog is loaded now
    stack.services.stop_server(stack.tools)
    events = stack.start(sid, "write a note").drain(approve_all([], workspace / "n.txt"))
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "The tool service is down; nothing was written."
    [preview] = previews(events)
    first, rest = preview.split("\n", 1)
    assert first.startswith("(no file context: the tool service is not reachable;")
    assert "+hello" in rest and "b/n.txt" in rest
    assert [r.result.error.code for r in results(events)] == ["tool_service_unavailable"]
    assert not (workspace / "n.txt").exists()


def test_a_tools_service_that_never_answers_costs_the_preview_at_most_its_bound(
        make_stack: Callable[..., LoopStack], workspace: Path, short_dir: Path) -> None:
    stack = make_stack([
        {"match": "note", "tool_calls": [{"name": "write", "arguments": {"path": "n.txt", "content": "hello\n"}}]},
        {"match": "denied_by_user", "text": "Not written, as you asked."},
    ], with_tools=True)
    sid = stack.open(auto_approve=False, interactive=True).session_id
    stack.services.stop_server(stack.tools)
    socket_path = short_dir / "tools.sock"
    socket_path.unlink(missing_ok=True)
    with silent_listener(socket_path) as accepted:  # accepts connections, never speaks HTTP/2
        events = stack.start(sid, "write a note").drain(deny_all)
        assert accepted, "the loop never reached the wedged tools socket"
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "Not written, as you asked."
    [preview] = previews(events)
    assert preview.startswith("(no file context: the tool service did not answer within 2 s")
    assert "+hello" in preview


def deny_all(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
    if event.WhichOneof("event") == "approval_requested":
        conv.send(loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(
            request_id=event.approval_requested.request_id, decision=loop_pb2.APPROVAL_DECISION_DENY)))


@contextlib.contextmanager
def silent_listener(path: Path) -> Iterator[list[socket.socket]]:
    """A unix socket that accepts every connection and never answers (a wedged service)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield held
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


def test_a_second_edit_that_builds_on_the_first_in_one_batch_is_not_called_a_sure_failure(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    target = workspace / "big.py"
    target.write_text(BIG)
    stack = make_stack([
        {"match": "twice", "tool_calls": [{"name": "read", "arguments": {"path": "big.py"}}]},
        {"match": "value_200", "tool_calls": [
            {"name": "edit", "arguments": {"path": "big.py", "old_string": "value_120 = 120\n",
                                           "new_string": "value_120 = 121\n"}},
            {"name": "edit", "arguments": {"path": "big.py", "old_string": "value_120 = 121\n",
                                           "new_string": "value_120 = 122\n"}}]},
        {"match": "Edited", "text": "Bumped twice."},
    ], with_tools=True)
    events = run(stack, "bump value 120 twice", [], target)
    assert status_name(finished(events)) == "completed", stack.fake.errors
    first, second = previews(events)
    assert "@@ -117,7 +117,7 @@" in first and "⚠" not in first
    assert second.startswith("⚠ this edit would fail on the file as it is now: edit_no_match")
    assert "an earlier call of this batch runs first" in second
    assert [r.result.error.code for r in results(events)] == ["", "", ""]  # both edits applied after all
    assert "value_120 = 122\n" in target.read_text()
