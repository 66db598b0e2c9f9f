"""The read tool's editor buffer: asked only inside the workspace, shown only when it differs from the disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from services.loop.core.approvals import Decision, Pending, RequestKind, Resolution
from services.loop.core.domain import ToolOutcome
from services.loop.core.turn_events import BufferRequested, EventBody
from services.loop.tools.editor_buffers import buffer_page, editor_path, with_buffer


def disk_read(shown: str, text: str) -> ToolOutcome:
    lines = text.splitlines()
    return ToolOutcome("c1", "read", True, buffer_page(text, shown, 1, 2000),
                       data={"path": shown, "total_lines": len(lines), "offset": 1, "lines_returned": len(lines),
                             "truncated": False})


def run(outcome: ToolOutcome, workspace: Path, answer: str | None, arguments: dict[str, object] | None = None,
        wait: float = 2.0) -> tuple[ToolOutcome, list[EventBody]]:
    async def go() -> tuple[ToolOutcome, list[EventBody]]:
        pending = Pending(1)
        events: list[EventBody] = []

        def emit(body: EventBody) -> None:
            events.append(body)
            if isinstance(body, BufferRequested) and answer is not None:
                assert pending.kind(body.request_id) == RequestKind.BUFFER
                pending.resolve(Resolution(body.request_id, Decision.ALLOW_ONCE, answer=answer, source="editor"))

        return await with_buffer(outcome, arguments or {"path": "x"}, str(workspace), pending, emit, wait), events

    return asyncio.run(go())


def test_an_unsaved_buffer_replaces_the_page_and_says_edits_change_the_disk(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo\n")
    result, events = run(disk_read("a.py", "one\ntwo\n"), tmp_path, "one\nTWO\nthree\n")
    assert [e.path for e in events if isinstance(e, BufferRequested)] == [str(tmp_path / "a.py")]
    assert "     2\tTWO" in result.output and "     3\tthree" in result.output
    assert "unsaved changes" in result.output and "on disk" in result.output
    assert result.data["total_lines"] == 3 and result.data["source"] == "editor_buffer"


def test_the_same_text_leaves_the_disk_read_as_it_was(tmp_path: Path) -> None:
    read = disk_read("a.py", "one\ntwo\n")
    result, _ = run(read, tmp_path, "one\ntwo\n")
    assert result == read


def test_the_page_asked_for_is_the_page_shown(tmp_path: Path) -> None:
    text = "".join(f"line {i}\n" for i in range(1, 11))
    read = ToolOutcome("c1", "read", True, buffer_page(text, "a.py", 3, 2), data={"path": "a.py"})
    result, _ = run(read, tmp_path, text.replace("line 4", "LINE 4"), {"path": "a.py", "offset": 3, "limit": 2})
    assert result.output.startswith("     3\tline 3\n     4\tLINE 4\n[6 more lines: read again with offset=5]")


def test_no_answer_and_paths_outside_the_workspace_keep_the_disk_text(tmp_path: Path) -> None:
    read = disk_read("a.py", "one\n")
    assert run(read, tmp_path, None, wait=0.05)[0] == read
    for shown in ("../elsewhere.py", "/etc/passwd", ""):
        outside = disk_read(shown, "one\n")
        result, events = run(outside, tmp_path, "stolen\n")
        assert result == outside and events == []
    assert editor_path(str(tmp_path), "../x") is None and editor_path(str(tmp_path), ".") is None
