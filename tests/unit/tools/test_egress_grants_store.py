"""Session grants kept in the tools service's state dir: a new Grants (a restarted service) reads
them, each session only its own, closing the session deletes them, an unreadable file grants nothing
(and says so), odd session ids never escape the store, old files are pruned."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

from services.tools.egress.grants import STORE_MAX_AGE_S, Grants


def kept(store: Path) -> Grants:
    grants = Grants()
    grants.keep_in(store)
    return grants


def test_a_restarted_service_keeps_each_sessions_grants_until_the_session_closes(tmp_path: Path) -> None:
    store = tmp_path / "egress-grants"
    first = kept(store)
    first.remember("s1", "pypi.org", 443)
    first.remember("s2", "npmjs.org", 443)
    assert (store / "s1.json").stat().st_mode & 0o777 == 0o600
    again = kept(store)
    assert again.granted("s1", "pypi.org", 443) and not again.granted("s1", "npmjs.org", 443)
    assert again.granted("s2", "npmjs.org", 443) and not again.granted("s3", "pypi.org", 443)
    assert again.revoke("s1", "pypi.org", 443) and not again.revoke("s1", "pypi.org", 443)
    assert not kept(store).granted("s1", "pypi.org", 443)
    again.forget("s2")
    assert not (store / "s2.json").exists() and not kept(store).granted("s2", "npmjs.org", 443)


def test_an_unreadable_or_foreign_file_grants_nothing_and_odd_ids_stay_inside(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = tmp_path / "g"
    store.mkdir()
    (store / "s1.json").write_text("{not json")
    (store / "s2.json").write_text(json.dumps({"session_id": "someone-else", "grants": [["evil.test", 443]]}))
    with caplog.at_level(logging.WARNING):
        grants = kept(store)
        assert not grants.granted("s1", "pypi.org", 443)
    assert "unreadable" in caplog.text
    assert not grants.granted("s2", "evil.test", 443)  # a file copied under another session's name
    grants.remember("../../escape", "pypi.org", 443)
    assert [p.parent for p in store.rglob("*.json")] == [store] * 3 and not (tmp_path / "escape.json").exists()
    assert kept(store).granted("../../escape", "pypi.org", 443)


def test_files_no_session_touched_for_a_month_are_pruned(tmp_path: Path) -> None:
    store = tmp_path / "g"
    kept(store).remember("old", "pypi.org", 443)
    kept(store).remember("new", "pypi.org", 443)
    stale = time.time() - STORE_MAX_AGE_S - 60
    os.utime(store / "old.json", (stale, stale))
    grants = kept(store)
    assert not (store / "old.json").exists() and grants.granted("new", "pypi.org", 443)
