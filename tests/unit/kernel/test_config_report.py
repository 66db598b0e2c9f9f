"""effective_config_report: what /config prints (value and source layer, secrets masked)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from services.kernel.config import effective_config_report, is_secret_key, load_config, mask_secret


@dataclass
class Inner:
    network: bool = False


@dataclass
class Sec:
    limit: int = 10
    timeout: float = 600.0
    tags: list[str] = field(default_factory=list)
    inner: Inner = field(default_factory=Inner)


def test_each_leaf_comes_with_its_source_layer(tmp_path: Path) -> None:
    user = tmp_path / "u.yaml"
    user.write_text("sec:\n  limit: 5\nmodels:\n  m:\n    model: x\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ai-coding.yaml").write_text("sec:\n  timeout: 30\n")
    rows = {k: (v, s) for k, v, s in effective_config_report(load_config(repo, env={}, user_path=user))}
    assert rows["sec.limit"] == (5, f"user:{user}")
    assert rows["sec.timeout"] == (30, f"project:{repo / 'ai-coding.yaml'}")
    assert rows["models.m.model"] == ("x", f"user:{user}")


def test_defaults_of_typed_sections_are_listed_as_default(tmp_path: Path) -> None:
    user = tmp_path / "u.yaml"
    user.write_text("sec:\n  limit: 5\n")
    rows = effective_config_report(load_config(None, env={}, user_path=user), {"sec": Sec})
    by_key = {k: (v, s) for k, v, s in rows}
    assert by_key["sec.limit"][0] == 5
    assert by_key["sec.timeout"] == (600.0, "default")
    assert by_key["sec.tags"] == ([], "default")
    assert by_key["sec.inner.network"] == (False, "default")
    assert [k for k, _, _ in rows] == sorted(k for k, _, _ in rows)


def test_secrets_are_masked_but_variable_references_stay_readable(tmp_path: Path) -> None:
    user = tmp_path / "u.yaml"
    user.write_text(
        "models:\n  a:\n    api_key: sk-live-abcdefghijklmnop1234\n  b:\n    api_key: ${TEAM_KEY}\n"
        "endpoints:\n  auth:\n    token: short\n"
        "memory:\n  embeddings:\n    api_key_env: EMBED_KEY\n"
    )
    rows = {k: v for k, v, _ in effective_config_report(load_config(None, env={}, user_path=user))}
    assert rows["models.a.api_key"] == "****1234"
    assert "abcdefgh" not in str(rows)
    assert rows["models.b.api_key"] == "${TEAM_KEY}"
    assert rows["endpoints.auth.token"] == "****"
    assert rows["memory.embeddings.api_key_env"] == "EMBED_KEY", "a variable's name is not a secret"


def test_the_env_layer_key_is_masked_too(tmp_path: Path) -> None:
    env = {"AI_CODING_MODEL": "m", "AI_CODING_API_KEY": "sk-from-the-environment-9999"}
    rows = {k: (v, s) for k, v, s in effective_config_report(load_config(None, env=env, user_path=tmp_path / "x"))}
    assert rows["models.default.api_key"] == ("****9999", "env")


def test_secret_key_detection_and_masking() -> None:
    assert is_secret_key("models.x.api_key") and is_secret_key("a.auth_token") and is_secret_key("h.Authorization")
    assert not is_secret_key("memory.embeddings.api_key_env") and not is_secret_key("ai.max_tokens")
    assert is_secret_key("headers.X-Api-Key") and is_secret_key("ai.websearch_api_key")
    assert not is_secret_key("models.x.max_tokens") and not is_secret_key("ai.turn_token_budget")
    assert mask_secret("") == "" and mask_secret(None) is None


def test_secrets_inside_lists_and_environment_or_headers_are_masked(tmp_path: Path) -> None:
    user = tmp_path / "u.yaml"
    user.write_text(
        "mcp:\n  servers:\n    - name: gh\n      command: [gh-mcp]\n"
        "      environment: {GITHUB_PAT: ghp_abcdefghijklmnopqrstuvwxyz, DATABASE_URL: 'postgres://u:pw@h/db'}\n"
        "      headers: {X-Custom: opaque-credential-value-123}\n"
    )
    rows = {k: v for k, v, _ in effective_config_report(load_config(None, env={}, user_path=user))}
    assert rows["mcp.servers.0.name"] == "gh"
    assert rows["mcp.servers.0.command"] == ["gh-mcp"]
    assert rows["mcp.servers.0.environment.GITHUB_PAT"] == "****wxyz"
    assert rows["mcp.servers.0.environment.DATABASE_URL"] == "****h/db"
    assert rows["mcp.servers.0.headers.X-Custom"] == "****-123"
    assert "pw@" not in str(rows) and "ghp_abc" not in str(rows)
