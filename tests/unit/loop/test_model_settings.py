from __future__ import annotations

from pathlib import Path

import pytest

from services.kernel.config import Config, load_config
from services.kernel.errors import ConfigError
from services.loop.model.settings import NO_KEY_PLACEHOLDER, resolve_model, secret_env_names


def cfg(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> Config:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return load_config(None, env=env or {}, user_path=path)


def test_no_model_configured_says_how_to_configure_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_model(cfg(tmp_path, ""), env={})
    assert str(err.value).startswith("no model configured: run `ai-coding setup`")
    assert "ai-coding config init --provider NAME --model ID" in str(err.value)
    assert "AI_CODING_MODEL" in str(err.value)


def test_an_env_var_reference_is_expanded(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  ds:\n    provider: deepseek\n    api_key: ${MY_DS_KEY}\n")
    s = resolve_model(c, env={"MY_DS_KEY": "sk-ref", "DEEPSEEK_API_KEY": "sk-conv"})
    assert s.api_key == "sk-ref"
    assert s.base_url == "https://api.deepseek.com/v1"
    assert s.model == "ds"


def test_a_missing_reference_is_a_hard_error_naming_the_variable(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  ds:\n    provider: deepseek\n    api_key: ${MY_DS_KEY}\n")
    with pytest.raises(ConfigError, match=r"MY_DS_KEY is not set"):
        resolve_model(c, env={"DEEPSEEK_API_KEY": "sk-conv"})


def test_a_literal_beats_the_providers_conventional_variable(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  ds:\n    provider: deepseek\n    api_key: sk-literal\n")
    assert resolve_model(c, env={"DEEPSEEK_API_KEY": "sk-conv"}).api_key == "sk-literal"


def test_the_conventional_variable_fills_a_missing_key(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  q:\n    provider: qwen\n    model: qwen-max\n")
    s = resolve_model(c, env={"DASHSCOPE_API_KEY": "sk-dash"})
    assert (s.api_key, s.model) == ("sk-dash", "qwen-max")


def test_a_keyed_provider_without_any_key_names_the_variable_to_export(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  o:\n    model: gpt-x\n")
    with pytest.raises(ConfigError, match="export OPENAI_API_KEY"):
        resolve_model(c, env={})


def test_a_local_endpoint_needs_no_key_and_gets_a_placeholder(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  local:\n    base_url: http://localhost:8000/v1\n")
    s = resolve_model(c, env={"OPENAI_API_KEY": "sk-must-not-leak"})
    assert s.provider == "generic"
    assert s.api_key == NO_KEY_PLACEHOLDER


def test_provider_is_inferred_from_base_url(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  l:\n    base_url: http://127.0.0.1:11434/v1\n")
    assert resolve_model(c, env={}).provider == "ollama"


def test_an_unknown_provider_lists_the_known_ones(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  x:\n    provider: anthropic\n    api_key: k\n")
    with pytest.raises(ConfigError, match="openai, deepseek, qwen, ollama, generic"):
        resolve_model(c, env={})


def test_a_wrong_type_or_range_is_left_out_with_a_warning_naming_the_key(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  x:\n    api_key: k\n    max_tokens: lots\n    max_retries: -2\n")
    settings = resolve_model(c, env={})
    assert settings.max_tokens is None and settings.max_retries == 4  # the defaults
    assert any("models.x.max_tokens" in w and "wrong type" in w for w in c.warnings), c.warnings
    assert any("models.x.max_retries" in w and "out of range" in w for w in c.warnings), c.warnings


def test_default_model_picks_the_entry_and_unknown_names_are_listed(tmp_path: Path) -> None:
    c = cfg(tmp_path, "default_model: b\nmodels:\n  a:\n    api_key: k1\n  b:\n    api_key: k2\n")
    assert resolve_model(c, env={}).name == "b"
    assert resolve_model(c, "a", env={}).api_key == "k1"
    with pytest.raises(ConfigError, match="configured: a, b"):
        resolve_model(c, "zz", env={})


def test_the_environment_layer_configures_a_default_model(tmp_path: Path) -> None:
    env = {"AI_CODING_MODEL": "m1", "AI_CODING_BASE_URL": "http://127.0.0.1:9/v1", "AI_CODING_API_KEY": "k"}
    s = resolve_model(cfg(tmp_path, "", env), env=env)
    assert (s.model, s.base_url, s.api_key, s.provider) == ("m1", "http://127.0.0.1:9/v1", "k", "generic")


def test_secret_env_names_lists_references_and_conventional_variables(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  a:\n    api_key: ${TEAM_KEY}\n    base_url: ${GATEWAY}/v1\n")
    names = secret_env_names(c)
    assert {"TEAM_KEY", "GATEWAY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "DASHSCOPE_API_KEY", "AI_CODING_API_KEY"} <= set(names)
    assert names == sorted(names)


def test_secret_env_names_include_the_deployment_token_and_the_embeddings_key(tmp_path: Path) -> None:
    c = cfg(tmp_path, "memory:\n  embeddings:\n    api_key_env: EMBED_KEY\n")
    assert {"AI_CODING_TOKEN", "EMBED_KEY"} <= set(secret_env_names(c))


def test_model_entry_names_keep_their_case_while_their_keys_are_normalized(tmp_path: Path) -> None:
    c = cfg(tmp_path, "defaultModel: GPT4o\nmodels:\n  GPT4o:\n    apiKey: k\n    maxTokens: 5\n  deepseekChat:\n"
                      "    provider: deepseek\n    api_key: k2\n")
    s = resolve_model(c, env={})
    assert (s.name, s.model, s.max_tokens, s.api_key) == ("GPT4o", "GPT4o", 5, "k")
    assert resolve_model(c, "deepseekChat", env={}).provider == "deepseek"


def test_thinking_on_off_and_effort_are_read_per_model(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  ds:\n    provider: deepseek\n    api_key: k\n    thinking: off\n"
                      "    reasoning_effort: high\n")
    s = resolve_model(c, env={})
    assert (s.thinking, s.reasoning_effort) == (False, "high")


def test_an_effort_for_qwen_is_refused_naming_the_setting_it_has(tmp_path: Path) -> None:
    c = cfg(tmp_path, "models:\n  q:\n    provider: qwen\n    api_key: k\n    reasoning_effort: high\n")
    with pytest.raises(ConfigError) as err:
        resolve_model(c, env={})
    assert "models.q.reasoning_effort" in str(err.value) and "thinking: on/off" in str(err.value)
