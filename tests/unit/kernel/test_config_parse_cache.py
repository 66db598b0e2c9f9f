"""A config file's parse is kept: an unchanged file is read without PyYAML, and what the cache
gives back is exactly what parsing gives, or nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.kernel.config import parse_cache, read_yaml_file
from services.kernel.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def config(isolated_home: Path, tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text("default_model: fake\nmodels:\n  fake: {provider: generic, model: m}\nloop:\n  memory: false\n")
    return path


def test_an_unchanged_file_is_read_again_without_importing_yaml(config: Path) -> None:
    first = read_yaml_file(config)
    probe = ("import json, sys; from pathlib import Path; from services.kernel.config import read_yaml_file; "
             f"data = read_yaml_file(Path({str(config)!r})); print(json.dumps([data, 'yaml' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'protos'}"})
    data, imported_yaml = json.loads(out.stdout)
    assert data == first == {"default_model": "fake", "models": {"fake": {"provider": "generic", "model": "m"}},
                             "loop": {"memory": False}}
    assert imported_yaml is False


def test_an_edited_file_is_parsed_again(config: Path) -> None:
    assert read_yaml_file(config)["loop"] == {"memory": False}
    config.write_text(config.read_text().replace("memory: false", "memory: true"))
    assert read_yaml_file(config)["loop"] == {"memory": True}


def test_each_read_gets_its_own_objects(config: Path) -> None:
    read_yaml_file(config)
    first = read_yaml_file(config)
    first["models"]["fake"]["model"] = "changed by a caller"
    assert read_yaml_file(config)["models"]["fake"]["model"] == "m"


@pytest.mark.parametrize("text", [
    "when: 2024-01-02\n",                    # a date
    "ports: {8080: web}\n",                  # a non-string key
    "ratio: .nan\n",                         # not finite
    "base: &b {x: 1}\nother: *b\n",          # one mapping reached twice
    "tags: !!set {a: null}\n",               # a set
])
def test_what_json_does_not_carry_the_same_is_parsed_every_time(isolated_home: Path, tmp_path: Path,
                                                                text: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    first = read_yaml_file(path)
    assert not parse_cache.entry_path(path).exists()
    assert read_yaml_file(path) == first


def test_an_entry_for_other_text_is_not_used(config: Path) -> None:
    read_yaml_file(config)
    entry = parse_cache.entry_path(config)
    kept = json.loads(entry.read_text())
    kept["text"] = "default_model: other\n"
    entry.write_text(json.dumps(kept))
    assert read_yaml_file(config)["default_model"] == "fake"


def test_an_entry_others_may_write_is_ignored(config: Path) -> None:
    read_yaml_file(config)
    entry = parse_cache.entry_path(config)
    kept = json.loads(entry.read_text())
    kept["data"] = {"default_model": "planted"}
    entry.write_text(json.dumps(kept))
    entry.chmod(0o666)
    assert read_yaml_file(config)["default_model"] == "fake"
    entry.chmod(0o600)
    entry.parent.chmod(0o777)
    assert read_yaml_file(config)["default_model"] == "fake"


def test_a_corrupt_entry_is_parsed_over_and_replaced(config: Path) -> None:
    read_yaml_file(config)
    entry = parse_cache.entry_path(config)
    entry.write_bytes(b"\x00{not json")
    assert read_yaml_file(config)["default_model"] == "fake"
    assert json.loads(entry.read_text())["data"]["default_model"] == "fake"


def test_a_data_dir_that_cannot_be_written_only_costs_the_parse(config: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker))
    assert read_yaml_file(config)["default_model"] == "fake"
    assert read_yaml_file(config)["default_model"] == "fake"


def test_broken_yaml_still_names_its_line_and_is_not_kept(isolated_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("loop:\n  memory: [unclosed\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match=r"config\.yaml:\d+"):
            read_yaml_file(path)
    assert not parse_cache.entry_path(path).exists()


def test_the_cache_keeps_a_bounded_number_of_entries(isolated_home: Path, tmp_path: Path) -> None:
    for i in range(parse_cache.MAX_ENTRIES + 5):
        path = tmp_path / f"c{i}.yaml"
        path.write_text(f"n: {i}\n")
        read_yaml_file(path)
    kept = list(parse_cache.entry_path(tmp_path / "c0.yaml").parent.glob("*.json"))
    assert len(kept) == parse_cache.MAX_ENTRIES
