"""The project layer: foreign files are skipped with a warning, an in-memory user layer, the reload stamp."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.kernel.config import layer_stamp, load_config
from services.kernel.errors import ConfigError


def repo(tmp_path: Path) -> tuple[Path, Path]:
    user = tmp_path / "user" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("ai:\n  max_tool_iterations: 7\n")
    ws = tmp_path / "repo" / "src"
    ws.mkdir(parents=True)
    return user, ws


@pytest.mark.parametrize("text", [
    "- name: web\n  image: nginx\n",
    "replicas: {{ .Values.replicas }}\nimage: {{ .Values.image }}\n",
    "just a sentence\n",
])
def test_a_project_file_that_is_not_our_mapping_is_skipped_with_one_warning_naming_it(
        tmp_path: Path, text: str) -> None:
    user, ws = repo(tmp_path)
    foreign = tmp_path / "repo" / "config.yaml"
    foreign.write_text(text)
    config = load_config(ws, env={}, user_path=user)
    assert config.get("ai.max_tool_iterations") == 7
    assert len(config.warnings) == 1 and str(foreign) in config.warnings[0]
    assert foreign not in config.files


def test_a_foreign_config_yaml_does_not_hide_a_valid_config_local_yaml_beside_it(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    (tmp_path / "repo" / "config.yaml").write_text("- a\n- b\n")
    (tmp_path / "repo" / "config.local.yaml").write_text("ai:\n  max_tool_iterations: 2\n")
    config = load_config(ws, env={}, user_path=user)
    assert config.get("ai.max_tool_iterations") == 2
    assert config.source_of("ai.max_tool_iterations").startswith("project:")


def test_a_user_layer_that_is_a_list_stays_a_hard_error_naming_the_file(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    user.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match=str(user)):
        load_config(ws, env={}, user_path=user)


def test_in_memory_user_data_takes_the_project_layer_on_top_through_the_trust_filter(tmp_path: Path) -> None:
    _, ws = repo(tmp_path)
    (tmp_path / "repo" / "config.yaml").write_text(
        "default_model: b\nai:\n  max_tool_iterations: 3\nhooks:\n  pre: [rm]\nmodels:\n  b:\n    base_url: http://x\n")
    data = {"models": {"a": {"base_url": "http://a"}, "b": {"base_url": "http://b"}}, "ai": {"strict_paths": True}}
    config = load_config(ws, env={"AI_CODING_MODEL": "ignored"}, user_data=data)
    assert config.get("ai") == {"strict_paths": True, "max_tool_iterations": 3}
    assert config.get("default_model") == "b"
    assert config.get("models.b.base_url") == "http://b"
    assert config.get("hooks") is None
    assert sorted(w.split("`")[1] for w in config.warnings) == ["hooks", "models.b.base_url"]
    assert config.user_path is None and config.get("models.default") is None


def test_in_memory_user_data_with_trust_keeps_the_projects_execution_keys(tmp_path: Path) -> None:
    _, ws = repo(tmp_path)
    (tmp_path / "repo" / "config.yaml").write_text("hooks:\n  pre: [make]\n")
    config = load_config(ws, env={"AI_CODING_TRUST_PROJECT": "1"}, user_data={})
    assert config.get("hooks") == {"pre": ["make"]} and config.warnings == []


def test_the_stamp_changes_when_a_config_file_is_created_edited_or_removed(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    first = layer_stamp(ws, user)
    assert layer_stamp(ws, user) == first
    local = tmp_path / "repo" / "config.local.yaml"
    local.write_text("ai: {}\n")
    created = layer_stamp(ws, user)
    assert created != first
    local.write_text("ai:\n  max_tool_iterations: 2\n")
    assert layer_stamp(ws, user) != created
    local.unlink()
    user.write_text("models: {}\n")
    assert layer_stamp(ws, user) not in (first, created)


def test_the_stamp_notices_a_project_file_becoming_writable_by_everyone(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    local = ws / "config.local.yaml"
    local.write_text("ai: {}\n")
    before = layer_stamp(ws, user)
    os.chmod(local, 0o666)
    assert layer_stamp(ws, user) != before


def test_the_stamp_of_a_missing_user_file_changes_once_it_is_created(tmp_path: Path) -> None:
    _, ws = repo(tmp_path)
    later = tmp_path / "later" / "config.yaml"
    before = layer_stamp(ws, later)
    later.parent.mkdir()
    later.write_text("models: {}\n")
    assert layer_stamp(ws, later) != before
    assert load_config(None, env={}, user_path=later).user_path == later
