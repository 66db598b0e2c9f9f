"""The deploy/ files stay in step with the code: they parse and name options that exist."""

from __future__ import annotations

from pathlib import Path

import yaml

from clients.cli.main import app
from clients.cli.supervisor import ALL_SERVICES, SupervisorConfig
from services.kernel.config import from_mapping, load_config
from services.kernel.endpoints import endpoint_for

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def test_every_yaml_file_in_deploy_parses() -> None:
    files = sorted(DEPLOY.rglob("*.yaml"))
    assert len(files) >= 10
    for path in files:
        assert [doc for doc in yaml.safe_load_all(path.read_text()) if doc], path


def test_the_documented_supervisor_section_loads_into_the_typed_config() -> None:
    raw = yaml.safe_load((DEPLOY / "supervisor.yaml").read_text())
    sup = from_mapping(SupervisorConfig, raw["supervisor"], "supervisor")
    assert sup.services == ALL_SERVICES and sup.backoff_max_seconds == 30


def test_the_remote_tool_host_example_points_the_workstation_at_tls_tcp(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    text = (DEPLOY / "remote-tools" / "workstation.yaml").read_text().replace("~/.config/ai-coding/token", str(token))
    (tmp_path / "config.yaml").write_text(text)
    config = load_config(None, env={"AI_CODING_CONFIG": str(tmp_path / "config.yaml"), "HOME": str(tmp_path)})
    tools = endpoint_for("tools", config, env={})
    assert (tools.scheme, tools.host, tools.port, tools.auth.token) == ("tcp", "tools-host.internal", 7301, "t0ken")
    assert "tools" not in config.get("supervisor.services")


def test_the_systemd_units_run_commands_the_cli_has() -> None:
    commands = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    for unit in [*sorted((DEPLOY / "systemd").glob("*.service")), DEPLOY / "remote-tools" / "ai-coding-tools.service"]:
        for line in unit.read_text().splitlines():
            if line.startswith(("ExecStart=", "ExecStop=")):
                sub = line.split("ai-coding ", 1)[1].split()[0]
                assert sub in commands, f"{unit.name}: {line}"
