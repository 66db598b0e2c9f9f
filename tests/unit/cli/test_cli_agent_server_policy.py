"""``ai-coding mcp serve``'s decisions: the caller's permission mode capped by the user's, the
workspace a task may use, progress lines from turn events, the changed files, and the event
store that lets an HTTP caller resume a dropped stream."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from clients.cli import views
from clients.cli.agent_server import policy
from clients.cli.agent_server.policy import Mode


@pytest.mark.parametrize(("asked", "ceiling", "got", "capped"), [
    ("", Mode.CONFIRM, Mode.CONFIRM, False),
    ("readonly", Mode.AUTO, Mode.READONLY, False),
    ("AUTO", Mode.AUTO, Mode.AUTO, False),
    ("auto", Mode.CONFIRM, Mode.CONFIRM, True),
    ("confirm", Mode.READONLY, Mode.READONLY, True),
])
def test_the_granted_mode_never_exceeds_the_users(asked: str, ceiling: Mode, got: Mode, capped: bool) -> None:
    grant = policy.grant_mode(asked, ceiling)
    assert grant.mode == got
    assert bool(grant.note) is capped
    if capped:
        assert f"the user allows at most {ceiling.label}" in grant.note


def test_an_unknown_mode_names_the_ones_to_use() -> None:
    with pytest.raises(policy.TaskInputError, match="use one of: readonly, confirm, auto"):
        policy.grant_mode("yolo", Mode.AUTO)


def test_a_task_runs_in_a_served_workspace_or_a_directory_inside_one(tmp_path: Path) -> None:
    (tmp_path / "a" / "sub").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    roots = [tmp_path / "a", tmp_path / "b"]
    assert policy.place_task("", roots) == policy.Place(roots[0], roots[0])
    assert policy.place_task("sub", roots) == policy.Place(roots[0], roots[0] / "sub")
    assert policy.place_task(str(tmp_path / "b"), roots).root == roots[1]


@pytest.mark.parametrize("where", ["..", "/", "sub/../../b/.."])
def test_a_workspace_outside_the_served_ones_is_refused(tmp_path: Path, where: str) -> None:
    (tmp_path / "a" / "sub").mkdir(parents=True)
    with pytest.raises(policy.TaskInputError, match="outside what this server may use"):
        policy.place_task(where, [tmp_path / "a"])


def test_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", tmp_path / "a" / "link")
    with pytest.raises(policy.TaskInputError, match="outside"):
        policy.place_task("link", [tmp_path / "a"])


def test_progress_lines_name_tools_and_the_end_and_skip_text_deltas() -> None:
    def line(body: views.Body) -> str | None:
        return policy.progress_message(views.Event(body=body))

    assert line(views.TextDelta(text="tok")) is None
    assert line(views.ToolStarted(tool="bash", arguments_json='{"command": "ls"}')) == 'running bash: {"command": "ls"}'
    failed = views.ToolResult(tool="write", ok=False, error=views.ToolError(code="permission_denied", message="no"))
    assert line(views.ToolFinished(result=failed)) == "write failed: no"
    assert line(views.TurnFinished(status=views.TurnStatus.INTERRUPTED)) == "turn finished: interrupted"


def test_changed_files_are_added_modified_and_deleted_and_skip_vcs_data(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "index").write_text("x")
    (tmp_path / "keep.txt").write_text("same")
    (tmp_path / "edit.txt").write_text("one")
    (tmp_path / "gone.txt").write_text("bye")
    before = policy.scan(tmp_path)
    (tmp_path / "edit.txt").write_text("three")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "new.py").write_text("")
    (tmp_path / ".git" / "index").write_text("changed")
    after = policy.scan(tmp_path)
    assert policy.changed_files(before.files, after.files) == [
        policy.Change("edit.txt", "modified"), policy.Change("gone.txt", "deleted"),
        policy.Change("pkg/new.py", "added")]


def test_a_scan_at_its_limit_says_it_is_incomplete_and_the_report_says_so(tmp_path: Path) -> None:
    for n in range(5):
        (tmp_path / f"f{n}").write_text("")
    partial = policy.scan(tmp_path, limit=3)
    assert not partial.complete and len(partial.files) == 3
    report = policy.TaskReport("completed", "ok", "s1", Mode.AUTO, scan_complete=False)
    assert "were checked for changes" in report.summary()


def test_the_event_store_replays_a_streams_later_events_and_forgets_the_oldest() -> None:
    from mcp.server.streamable_http import EventMessage
    from mcp.types import JSONRPCNotification

    from clients.cli.agent_server.events import MemoryEventStore

    def note(n: int) -> JSONRPCNotification:
        return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"n": n})

    async def main() -> tuple[list[EventMessage], str | None, str | None]:
        store = MemoryEventStore(keep=4)
        first = await store.store_event("s1", None)  # a priming event
        await store.store_event("s1", note(1))
        await store.store_event("other", note(99))
        await store.store_event("s1", note(2))
        got: list[EventMessage] = []

        async def send(event: EventMessage) -> None:
            got.append(event)

        stream = await store.replay_events_after(first, send)
        await store.store_event("s1", note(3))  # pushes the priming event out
        gone = await store.replay_events_after(first, send)
        return got, stream, gone

    got, stream, gone = anyio.run(main)
    assert stream == "s1" and gone is None
    assert [e.message.params for e in got] == [{"n": 1}, {"n": 2}]  # type: ignore[union-attr]
