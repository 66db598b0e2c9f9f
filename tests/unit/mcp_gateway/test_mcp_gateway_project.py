"""Claude Code's .mcp.json read as our server entries; a bad file or entry is a sentence, not a crash."""

from __future__ import annotations

import json
from pathlib import Path

from services.mcp_gateway.project import read_project_servers
from services.mcp_gateway.settings import parse_server


def test_stdio_http_and_sse_servers_become_valid_entries(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "db tool": {"command": "npx", "args": ["-y", "pkg"], "env": {"TOKEN": "${DB_TOKEN}"}},
        "api": {"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer t"}},
        "old__api": {"type": "sse", "url": "https://x.example/sse"},
        "ws": {"type": "websocket", "url": "wss://x"},
        "nocmd": {"args": []},
    }}))
    entries, problems = read_project_servers(path)
    assert [e["name"] for e in entries] == ["db-tool", "api", "old_api"]
    db, api, old = (parse_server(e, str(path)) for e in entries)
    assert db.type == "local" and db.command == ("npx", "-y", "pkg") and db.environment == {"TOKEN": "${DB_TOKEN}"}
    assert api.type == "remote" and api.transport == "streamable_http" and api.headers["Authorization"] == "Bearer t"
    assert old.transport == "sse"
    assert any("'ws' left out: type 'websocket' is not stdio, http or sse" in p for p in problems)
    assert any("'nocmd' left out: a http server needs `url`" in p for p in problems)


def test_a_broken_file_is_one_sentence_naming_it(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text("{not json")
    assert read_project_servers(path) == ([], [f"{path}: not valid JSON (Expecting property name enclosed in "
                                                 "double quotes at line 1); fix it"])
    path.write_text("[]")
    assert read_project_servers(path)[1] == [f"{path}: no `mcpServers` object; nothing to start"]
