"""The project layer: foreign files are skipped with a warning, an in-memory user layer, the reload stamp."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.kernel.config import layer_stamp, load_config
from services.kernel.errors import ConfigError
from tests.support.trust import trust_workspace


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
    "default_model: resnet50\nepochs: 90\nai:\n  - layer1\n",
])
def test_another_tools_config_yaml_is_not_read_and_is_named_in_one_note(tmp_path: Path, text: str) -> None:
    user, ws = repo(tmp_path)
    foreign = tmp_path / "repo" / "config.yaml"
    foreign.write_text(text)
    config = load_config(ws, env={}, user_path=user)
    assert config.get("ai.max_tool_iterations") == 7 and config.get("default_model") is None
    assert config.warnings == []
    assert len(config.notes) == 1 and str(foreign) in config.notes[0] and "ai-coding.yaml" in config.notes[0]
    assert foreign not in config.files


def test_a_user_file_named_config_yaml_above_the_workspace_is_read_once_and_never_called_unread(
        tmp_path: Path) -> None:
    # AI_CODING_CONFIG may point at a config.yaml in a parent of the workspace: the project search
    # finds it too, and it is neither a second layer nor "not an ai-coding file".
    user = tmp_path / "config.yaml"
    user.write_text("default_model: fake\nmodels:\n  fake:\n    model: m\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    config = load_config(ws, env={}, user_path=user)
    assert config.get("default_model") == "fake"
    assert config.notes == [] and config.warnings == []
    assert config.files == [user]


def test_a_foreign_config_yaml_does_not_hide_our_local_file_beside_it(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    (tmp_path / "repo" / "config.yaml").write_text("- a\n- b\n")
    (tmp_path / "repo" / "ai-coding.local.yaml").write_text("ai:\n  max_tool_iterations: 2\n")
    config = load_config(ws, env={}, user_path=user)
    assert config.get("ai.max_tool_iterations") == 2
    assert config.source_of("ai.max_tool_iterations").startswith("project:")


def test_a_foreign_config_yaml_nearer_the_workspace_does_not_stop_the_search_for_ours(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    (ws / "config.yaml").write_text("default_model: resnet50\n")
    (tmp_path / "repo" / "ai-coding.yaml").write_text("ai:\n  max_tool_iterations: 3\n")
    config = load_config(ws, env={}, user_path=user)
    assert config.get("ai.max_tool_iterations") == 3 and config.get("default_model") is None
    assert config.files == [user, tmp_path / "repo" / "ai-coding.yaml"]


def test_a_config_yaml_that_declares_itself_is_read_without_its_declaration(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    (tmp_path / "repo" / "config.yaml").write_text("ai-coding: 1\nai:\n  max_tool_iterations: 4\n")
    config = load_config(ws, env={}, user_path=user)
    assert config.get("ai.max_tool_iterations") == 4
    assert config.get("ai_coding") is None and config.warnings == [] and config.notes == []


def test_our_section_inside_another_tools_config_yaml_is_read_and_its_keys_left_alone(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    (tmp_path / "repo" / "config.yaml").write_text(
        "default_model: resnet50\nepochs: 90\naiCoding:\n  ai:\n    max_tool_iterations: 5\n")
    config = load_config(ws, env={}, user_path=user)
    assert config.get("ai.max_tool_iterations") == 5
    assert config.get("default_model") is None and config.get("epochs") is None and config.warnings == []


def test_a_declared_config_yaml_with_broken_yaml_warns_naming_the_file(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    broken = tmp_path / "repo" / "config.yaml"
    broken.write_text("ai-coding: 1\nai: [unclosed\n")
    config = load_config(ws, env={}, user_path=user)
    assert config.get("ai.max_tool_iterations") == 7
    assert len(config.warnings) == 1 and str(broken) in config.warnings[0] and "invalid YAML" in config.warnings[0]


def test_an_unknown_top_level_key_in_our_file_warns_with_the_key_it_resembles(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    ours = tmp_path / "repo" / "ai-coding.yaml"
    ours.write_text("defualt_model: fast\nzzz: 1\n")
    config = load_config(ws, env={}, user_path=user)
    assert config.warnings == [f"{ours}: unknown key `defualt_model` (did you mean `default_model`?); it is ignored",
                               f"{ours}: unknown key `zzz`; it is ignored"]


def test_an_unknown_key_inside_a_section_warns_when_the_section_is_read(tmp_path: Path) -> None:
    from dataclasses import dataclass

    @dataclass
    class Limits:
        max_tool_iterations: int = 10

    user, ws = repo(tmp_path)
    user.write_text("ai:\n  max_tool_iteration: 7\n")
    config = load_config(ws, env={}, user_path=user)
    assert config.section(Limits, "ai").max_tool_iterations == 10
    config.section(Limits, "ai")
    assert config.warnings == [f"{user}: unknown key `ai.max_tool_iteration` (did you mean "
                               "`ai.max_tool_iterations`?); it is ignored"]


def test_a_user_layer_that_is_a_list_stays_a_hard_error_naming_the_file(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    user.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match=str(user)):
        load_config(ws, env={}, user_path=user)


def test_in_memory_user_data_takes_the_project_layer_on_top_through_the_trust_filter(tmp_path: Path) -> None:
    _, ws = repo(tmp_path)
    (tmp_path / "repo" / "ai-coding.yaml").write_text(
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
    (tmp_path / "repo" / "ai-coding.yaml").write_text("hooks:\n  pre: [make]\n")
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    assert trust_workspace(ws, env, user_data={}) == 1
    config = load_config(ws, env=env, user_data={})
    assert config.get("hooks") == {"pre": ["make"]} and config.warnings == []


def test_the_stamp_changes_when_a_config_file_is_created_edited_or_removed(tmp_path: Path) -> None:
    user, ws = repo(tmp_path)
    first = layer_stamp(ws, user)
    assert layer_stamp(ws, user) == first
    local = tmp_path / "repo" / "ai-coding.local.yaml"
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
    local = ws / "ai-coding.local.yaml"
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
