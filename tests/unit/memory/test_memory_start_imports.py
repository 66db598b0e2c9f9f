"""The memory service reports SERVING before numpy loads, and warm() (its on_start) loads it."""

from __future__ import annotations

import subprocess
import sys


def _imported(code: str) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def test_building_the_memory_service_imports_no_numpy() -> None:
    imported = _imported("from services.kernel.config import load_config; import services.memory.main as m; "
                         "m.build(load_config(None, user_data={}))")
    assert "services.memory.service" in imported  # the check sees the imports at all
    assert "numpy" not in imported


def test_warm_loads_the_numpy_side() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys; from services.memory.service import warm; warm(); "
                           "print(' '.join(sorted(sys.modules)))"], capture_output=True, text=True, timeout=120,
                          check=True)
    loaded = set(done.stdout.split())
    assert {"numpy", "services.memory.index", "services.memory.ranking", "services.memory.consolidate"} <= loaded
