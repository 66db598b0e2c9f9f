"""The pure decisions of the first-run setup: where Ollama answers, a typed ``$VAR``, the model
offered, the config written, and how an endpoint's error is worded."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from clients.cli.setup.choices import (
    KeyRef,
    ModelEntry,
    ollama_base_url,
    pick_model,
    var_reference,
    write_user_config,
)
from clients.cli.setup.doctor import Status, runtime_dir_check
from clients.cli.setup.probe import Problem, classify, error_message
from clients.cli.setup.wizard import menu_pick
from services.kernel.errors import ConfigError


@pytest.mark.parametrize(("host", "url"), [
    ("", "http://localhost:11434/v1"),
    ("127.0.0.1:9999", "http://127.0.0.1:9999/v1"),
    ("0.0.0.0", "http://localhost:11434/v1"),
    ("https://ollama.lan:443/", "https://ollama.lan:443/v1"),
])
def test_ollama_is_looked_for_where_ollama_host_says(host: str, url: str) -> None:
    assert ollama_base_url({"OLLAMA_HOST": host} if host else {}) == url


def test_a_typed_dollar_name_is_a_variable_reference_and_a_key_is_not() -> None:
    assert var_reference("$MY_KEY") == "MY_KEY"
    assert var_reference("${MY_KEY}") == "MY_KEY"
    assert var_reference("sk-abc$") == ""
    assert var_reference("MY_KEY") == ""


def test_the_suggested_model_is_offered_only_when_the_endpoint_lists_it() -> None:
    assert pick_model(["a", "deepseek-chat"], "deepseek-chat") == "deepseek-chat"
    assert pick_model(["a", "b"], "deepseek-chat") == "a"
    assert pick_model([], "deepseek-chat") == "deepseek-chat"
    assert menu_pick("2", ["a", "b"]) == 1 and menu_pick("b", ["a", "b"]) == 1 and menu_pick("3", ["a"]) is None


def test_the_config_written_names_the_variable_and_leaves_the_default_endpoint_out(tmp_path: Path) -> None:
    target = tmp_path / "ai-coding" / "config.yaml"
    entry = ModelEntry("deepseek", "deepseek-chat", "https://api.deepseek.com/v1", KeyRef(variable="DEEPSEEK_API_KEY"))
    write_user_config(entry, {}, target)
    data = yaml.safe_load(target.read_text())
    assert data == {"default_model": "main", "models": {"main": {
        "provider": "deepseek", "model": "deepseek-chat", "api_key": "${DEEPSEEK_API_KEY}"}}}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    with pytest.raises(ConfigError, match="already configures model"):
        write_user_config(entry, {}, target)


def test_a_user_file_without_models_keeps_its_settings_and_gains_the_entry(tmp_path: Path) -> None:
    target = tmp_path / "config.yaml"
    target.write_text("# just comments\ntools:\n  sandbox:\n    network: true\n")
    os.chmod(target, 0o644)
    write_user_config(ModelEntry("ollama", "llama3.2", "http://localhost:11434/v1", KeyRef()), {}, target)
    data = yaml.safe_load(target.read_text())
    assert data["tools"] == {"sandbox": {"network": True}}
    assert data["models"]["main"] == {"provider": "ollama", "model": "llama3.2"}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_an_endpoint_error_is_worded_with_its_status_and_its_own_sentence() -> None:
    said = error_message(b'{"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}}')
    problem = classify(401, said, "http://x/v1/chat/completions")
    assert problem.kind is Problem.KEY_REFUSED
    assert str(problem) == "the endpoint refused the key (HTTP 401: Incorrect API key provided.)"
    assert classify(404, "no such model", "u", "m").kind is Problem.MODEL_UNKNOWN
    assert classify(500, "boom", "u", "m").kind is Problem.REFUSED


def test_a_runtime_dir_others_can_enter_fails_with_the_chmod_that_fixes_it(tmp_path: Path) -> None:
    rdir = tmp_path / "run"
    assert runtime_dir_check(rdir, os.getuid()).status is Status.OK  # not there yet: created 0700
    rdir.mkdir()
    os.chmod(rdir, 0o755)
    check = runtime_dir_check(rdir, os.getuid())
    assert check.status is Status.FAIL and check.fix == f"chmod 700 {rdir}"
    os.chmod(rdir, 0o700)
    assert runtime_dir_check(rdir, os.getuid()).status is Status.OK
