"""An editor that announces ``fs`` and ``terminal`` (the official ACP TypeScript SDK's client, in
tests/node/acp_client.mjs): the read tool shows its unsaved buffer, only for paths inside the
workspace the sandboxed read already allowed; writes and commands stay in our tools service."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from tests.e2e.test_acp_editor import drive, final_update, of_kind, pytestmark
from tests.e2e.test_cli_process_control import env

__all__ = ["env", "pytestmark"]

UNSAVED = "draft: typed in the editor, not saved\n"


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([
        {"name": "read", "match": "read the draft", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"name": "escape", "tool_calls": [{"name": "read", "arguments": {"path": "../outside.txt"}}]},
        {"name": "link", "tool_calls": [{"name": "read", "arguments": {"path": "link.txt"}}]},
        {"name": "saved", "tool_calls": [{"name": "read", "arguments": {"path": "saved.txt"}}]},
        {"name": "failing", "tool_calls": [{"name": "read", "arguments": {"path": "failing.txt"}}]},
        {"name": "edit", "tool_calls": [{"name": "edit", "arguments": {
            "path": "saved.txt", "old_string": "on disk", "new_string": "on disk, edited"}}]},
        {"name": "run", "tool_calls": [{"name": "bash", "arguments": {"command": "echo live-$((2+3))"}}]},
        {"name": "done", "text": "Read it."},
    ]) as server:
        yield server


def tool_results(model: FakeModelServer) -> list[str]:
    last = model.chat_requests[-1].body["messages"]
    return [str(m["content"]) for m in last if m.get("role") == "tool"]


def test_reads_see_the_editors_unsaved_buffer_and_nothing_leaves_the_workspace(
        env: dict[str, Any], model: FakeModelServer) -> None:
    workspace: Path = env["workspace"]
    (workspace / "notes.txt").write_text("draft: as saved on disk\n")
    (workspace / "saved.txt").write_text("on disk\n")
    (workspace / "failing.txt").write_text("the editor fails on this one\n")
    outside = workspace.parent / "outside.txt"
    outside.write_text("secret outside the workspace\n")
    (workspace / "link.txt").symlink_to(outside)
    # The editor holds unsaved text for the notes and, if it were asked, for the files outside.
    buffers = {"notes.txt": UNSAVED, str(outside): "editor text of outside\n", "link.txt": "editor text of link\n",
               "failing.txt": None}

    report = drive("editor", str(workspace), json.dumps(buffers), "read the draft", cwd=workspace)
    assert report["stopReasons"] == ["end_turn"]

    # Only the files the sandbox read inside the workspace were asked for, by absolute path.
    asked = [r["path"] for r in report["fsReads"]]
    assert asked == [str(workspace / name) for name in ("notes.txt", "saved.txt", "failing.txt")]
    assert all(r["sessionId"] == report["sessionId"] for r in report["fsReads"])

    results = tool_results(model)
    notes, escape, link, saved, failing, _edit, ran = results
    assert UNSAVED.strip() in notes and "as saved on disk" not in notes
    assert "unsaved changes in the user's editor" in notes  # the model knows edits apply to the disk file
    assert "secret" not in escape and "editor text" not in escape
    assert "secret" not in link and "editor text" not in link
    assert "on disk" in saved and "unsaved" not in saved  # the editor's text is the disk's: shown as read
    assert "the editor fails on this one" in failing  # the editor's error: the disk text stands
    assert "live-5" in ran
    # The file on disk still has its saved text: nothing was written through the editor.
    assert (workspace / "notes.txt").read_text() == "draft: as saved on disk\n"
    assert (workspace / "saved.txt").read_text() == "on disk, edited\n"
    assert report["refused"] == []  # never fs/write_text_file nor terminal/create

    # The read's tool call shows the editor's text; the command's output streams as text content.
    calls = {json.dumps(u["rawInput"]): u for u in of_kind(report, "tool_call")}
    read = next(u for k, u in calls.items() if "notes.txt" in k)
    assert UNSAVED.strip() in json.dumps(final_update(report, read["toolCallId"])["content"])
    bash = next(u for k, u in calls.items() if "live-" in k)
    contents = final_update(report, bash["toolCallId"])["content"]
    assert [c["type"] for c in contents] == ["content"] and "live-5" in contents[0]["content"]["text"]
