"""The README's Quick start is what a newcomer (and the fresh-clone check) runs as written: its first
fenced block installs and runs the demo, its second is exactly the test command CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def quick_start_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^#+[^\n]*quick ?start[^\n]*\n(.*?)(?=^#{1,2} |\Z)", text, re.S | re.M | re.I)
    assert section is not None, "README.md has no Quick start section"
    return [b.strip() for b in re.findall(r"```[a-zA-Z]*\n(.*?)```", section.group(1), re.S)]


def test_the_first_quick_start_block_installs_and_runs_the_demo() -> None:
    blocks = quick_start_blocks()
    assert len(blocks) >= 2
    assert "pip install ." in blocks[0] and "ai-coding demo" in blocks[0]


def test_the_second_quick_start_block_is_the_test_command_ci_runs() -> None:
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.lstrip().startswith(("#", "set ", "cd "))]
    assert quick_start_blocks()[1] in ci, (quick_start_blocks()[1], ci)
