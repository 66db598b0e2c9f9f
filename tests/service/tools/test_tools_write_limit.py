"""write and edit stop where read stops (10 MB): a file the agent writes, it can read back."""

from __future__ import annotations

import json
from pathlib import Path

from ai_coding.v1 import common_pb2

from tests.support.tools_harness import ThreadedToolService

LIMIT = 10 * 1024 * 1024


def call(svc: ThreadedToolService, tool: str, **args: object) -> common_pb2.ToolResult:
    return svc.call("s1", tool, json.dumps(args))[1]


def test_write_refuses_content_read_would_refuse_and_writes_nothing(
        service: ThreadedToolService, workspace: Path) -> None:
    result = call(service, "write", path="big.txt", content="x" * (LIMIT + 1))
    assert not result.ok and result.error.code == "content_too_large"
    assert result.error.message == (f"the new content of big.txt would be {LIMIT + 1:,} bytes; write and edit stop "
                                    f"at {LIMIT:,} (what read accepts)")
    assert "Split it" in result.error.hint
    assert not (workspace / "big.txt").exists()


def test_content_at_the_limit_is_written_and_reads_back(service: ThreadedToolService, workspace: Path) -> None:
    assert call(service, "write", path="edge.txt", content="y" * (LIMIT - 1) + "\n").ok
    assert call(service, "read", path="edge.txt", limit=1).ok


def test_an_edit_that_would_grow_a_file_past_the_limit_is_refused(
        service: ThreadedToolService, workspace: Path) -> None:
    assert call(service, "write", path="grow.txt", content="a" * (LIMIT - 10) + "\nEND\n").ok
    assert call(service, "read", path="grow.txt", limit=1).ok
    result = call(service, "edit", path="grow.txt", old_string="END", new_string="E" * 100)
    assert not result.ok and result.error.code == "content_too_large"
    assert (workspace / "grow.txt").read_text().endswith("\nEND\n")
