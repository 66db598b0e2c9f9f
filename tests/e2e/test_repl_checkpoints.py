"""/undo and /redo in the real REPL (a pseudo-terminal) against the real services and the fake
model: the approval of an rm says it is restorable with /undo, /undo brings the tree back byte
for byte (tree hash), /redo re-applies the turn."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from tests.e2e.test_repl_session import Term  # noqa: E402
from tests.support.cli_stack import Stack, cli_stack  # noqa: E402
from tests.support.trees import tree_hash  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-replck-", [{"text": "unused", "repeat": "forever"}]) as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    path = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (path / "src").mkdir()
    (path / "src" / "main.py").write_text("print('hi')\n")
    (path / "data.bin").write_bytes(bytes(range(200)))
    return path


def test_undo_and_redo_in_the_repl_restore_and_reapply_a_shell_turn(stack: Stack, workspace: Path) -> None:
    stack.model.load_script([
        {"tool_calls": [{"name": "bash", "arguments": {
            "command": "rm -rf src data.bin && mkdir empty && ln -s gone link && printf '\\001' > new.bin"}}]},
        {"text": "Cleaned up."},
    ])
    before = tree_hash(workspace)
    term = Term(stack, workspace)
    try:
        term.line("clean up")
        term.expect("restorable with /undo")  # the approval's preview of the rm
        term.key("y")
        term.expect("● completed")
        after = tree_hash(workspace)
        assert after != before and not (workspace / "src").exists()
        term.line("/undo")
        term.expect("/redo re-applies")
        assert tree_hash(workspace) == before
        term.line("/redo")
        term.expect("/undo takes the turn back")
        assert tree_hash(workspace) == after
    finally:
        term.close()
