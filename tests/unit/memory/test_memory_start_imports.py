"""numpy (the BM25 index, ranking, consolidation) loads at a memory service's first recall, not before:
not to report SERVING, not when the first turn's constraints open a store with notes in it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _imported(code: str) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def _run(code: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


ENGINE = ("import json, sys; from services.memory.service import MemoryEngine; "
          "from services.memory.settings import MemorySettings; "
          "from services.memory.model import Candidate, RecallQuery; engine = MemoryEngine(MemorySettings()); ")


def test_building_the_memory_service_imports_no_numpy() -> None:
    imported = _imported("from services.kernel.config import load_config; import services.memory.main as m; "
                         "m.build(load_config(None, user_data={}))")
    assert "services.memory.service" in imported  # the check sees the imports at all
    assert "numpy" not in imported


def test_constraints_open_a_store_without_numpy_and_the_first_recall_loads_it(tmp_path: Path) -> None:
    ws = str(tmp_path)
    _run(ENGINE + f"engine.write_note({ws!r}, Candidate('We deploy with nomad, never kubernetes', kind='decision')); "
         f"engine.write_note({ws!r}, Candidate('The parser lives in calc/parse.py')); engine.close(); print('{{}}')")
    got = _run(ENGINE + f"block = engine.constraints({ws!r}); before = 'numpy' in sys.modules; "
               f"hits = [h.note.text for h in engine.recall({ws!r}, RecallQuery('nomad')).hits]; "
               "print(json.dumps({'block': block, 'before': before, 'after': 'numpy' in sys.modules, 'hits': hits}))")
    assert "nomad" in str(got["block"])  # the store really opened and read the decision
    assert got["before"] is False
    assert got["after"] is True
    assert got["hits"] == ["We deploy with nomad, never kubernetes"]
