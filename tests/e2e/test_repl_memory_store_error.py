"""/memory in the real REPL on a workspace whose memory.db is truncated: the memory service's own
sentence (the file and the fix) is shown, not "not reachable, run ai-coding up"."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.e2e.test_repl_session import Term, plain, stack, workspace
from tests.support.cli_stack import Stack

__all__ = ["stack", "workspace"]  # fixtures used by name below


def test_a_truncated_memory_db_is_named_with_the_fix_in_the_repl(stack: Stack, workspace: Path) -> None:
    state = workspace / ".ai-coding"
    state.mkdir(exist_ok=True)
    db = state / "memory.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 200)
    db.write_bytes(db.read_bytes()[:3000])
    term = Term(stack, workspace)
    try:
        term.line("/memory")
        out = plain(term.expect("start fresh."))
        assert f"cannot open the memory store {db}:" in out
        assert "not reachable" not in out
    finally:
        term.close()
