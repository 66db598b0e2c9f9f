from __future__ import annotations

from services.loop.model.providers import PROVIDERS, get_provider, infer_provider


def test_the_table_has_the_five_providers_with_their_key_variables() -> None:
    assert {name: p.key_env for name, p in PROVIDERS.items()} == {
        "openai": "OPENAI_API_KEY",
        "deepseek": "DEEPSEEK_API_KEY",
        "qwen": "DASHSCOPE_API_KEY",
        "ollama": "",
        "generic": "",
    }


def test_a_default_endpoint_infers_its_provider() -> None:
    assert infer_provider("https://api.deepseek.com/v1") == "deepseek"
    assert infer_provider("https://dashscope.aliyuncs.com/compatible-mode/v1") == "qwen"
    assert infer_provider("https://api.openai.com/v1") == "openai"
    assert infer_provider("http://127.0.0.1:11434/v1") == "ollama"


def test_localhost_on_another_port_is_generic_not_ollama() -> None:
    assert infer_provider("http://localhost:8000/v1") == "generic"


def test_the_same_host_on_a_different_port_is_not_that_provider() -> None:
    assert infer_provider("https://api.deepseek.com:8443/v1") == "generic"


def test_an_unparseable_url_is_generic() -> None:
    assert infer_provider("not a url") == "generic"
    assert infer_provider("http://[::1/v1") == "generic"


def test_provider_lookup_ignores_case() -> None:
    row = get_provider("DeepSeek")
    assert row is not None and row.name == "deepseek"
    assert get_provider("anthropic") is None
