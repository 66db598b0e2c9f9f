"""Whether a gateway started now would have any server (the loop leaves a gateway on demand alone
when none is declared): the user config's ``mcp.servers`` or the sidecar's ``servers``."""

from __future__ import annotations

from pathlib import Path

from services.mcp_gateway.sidecar_watch import DeclaredServers

SERVER = "{name: demo, type: local, command: [echo]}"


def declared(tmp_path: Path, config: str | None, sidecar: str | None) -> DeclaredServers:
    path = tmp_path / "ai-coding" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    for where, text in ((path, config), (path.with_name("mcp.local.yaml"), sidecar)):
        if text is None:
            where.unlink(missing_ok=True)
        else:
            where.write_text(text)
    return DeclaredServers({"AI_CODING_CONFIG": str(path), "HOME": str(tmp_path)})


def test_nothing_anywhere_declares_no_server(tmp_path: Path) -> None:
    assert declared(tmp_path, None, None)() is False
    assert declared(tmp_path, "mcp: {servers: []}\n", "servers: []\n")() is False


def test_a_server_in_the_config_or_the_sidecar_is_declared(tmp_path: Path) -> None:
    assert declared(tmp_path, f"mcp: {{servers: [{SERVER}]}}\n", None)() is True
    assert declared(tmp_path, None, f"servers: [{SERVER}]\n")() is True


def test_an_unreadable_file_counts_as_declared_the_gateway_says_what_is_wrong(tmp_path: Path) -> None:
    assert declared(tmp_path, None, "servers: [unclosed\n")() is True


def test_an_edit_is_seen_at_the_next_question(tmp_path: Path) -> None:
    ask = declared(tmp_path, None, None)
    assert ask() is False
    (tmp_path / "ai-coding" / "mcp.local.yaml").write_text(f"servers: [{SERVER}]\n")
    assert ask() is True
