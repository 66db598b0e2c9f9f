"""Regenerating the protobuf code must change nothing: the committed code is the contract."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_regenerating_the_protos_changes_no_committed_file() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_protos.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
