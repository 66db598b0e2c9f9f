"""A section a service follows while it runs: re-read when its file changes, kept when the new
file is broken (with a warning), fixed for a config built in memory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from services.kernel.config import Config, LiveSection, load_config


@dataclass
class Knobs:
    limit: int = 5
    enabled: bool = True


def _write(path: Path, text: str, tick: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(tick * 10**9, tick * 10**9))  # a distinct mtime even within one clock tick


def test_an_edited_file_is_read_again_and_a_broken_one_keeps_the_last_good_value(tmp_path: Path) -> None:
    user = tmp_path / "config.yaml"
    _write(user, "knobs:\n  limit: 7\n", 1)
    heard: list[str] = []
    live = LiveSection(load_config(None, env={}, user_path=user), Knobs, "knobs", on_warning=heard.append)
    first = live.get()
    assert first.limit == 7 and live.get() is first  # unchanged file: not read again
    _write(user, "knobs:\n  limit: 9\n  enabled: false\n", 2)
    assert (live.get().limit, live.get().enabled) == (9, False)
    _write(user, "knobs: [not, a, mapping\n", 3)
    assert live.get().limit == 9
    assert len(heard) == 1 and "could not be re-read" in heard[0] and "`knobs` stays as it was" in heard[0]
    _write(user, "knobs:\n  limit: many\n", 4)
    assert live.get().limit == 5 and any("knobs.limit" in w for w in heard)  # a bad value: its default
    user.unlink()
    assert live.get() == Knobs()  # no file: the defaults, as at a start without one


def test_a_config_built_in_memory_stays_as_given() -> None:
    live = LiveSection(Config(data={"knobs": {"limit": 3}}), Knobs, "knobs")
    assert live.get().limit == 3
