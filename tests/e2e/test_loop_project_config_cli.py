"""The CLI reads the layered config as the loop does: another tool's config.yaml above the workspace is not read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120, stdin=subprocess.DEVNULL, check=False)


def test_config_show_skips_a_helm_values_list_above_the_workspace(
        isolated_home: Path, tmp_path: Path) -> None:
    ws = tmp_path / "chart" / "app"
    ws.mkdir(parents=True)
    (tmp_path / "chart" / "config.yaml").write_text("- name: web\n  image: nginx\n")
    (tmp_path / "chart" / "ai-coding.local.yaml").write_text("ai:\n  max_tool_iterations: 4\n")
    done = cli("config", "show", "-w", str(ws), "--json")
    assert done.returncode == 0, done.stderr
    rows = {key: (value, source) for key, value, source in json.loads(done.stdout)}
    assert rows["ai.max_tool_iterations"][0] == 4
    assert "ai-coding.local.yaml" in rows["ai.max_tool_iterations"][1]
    assert "Traceback" not in done.stderr


def test_config_show_notes_once_a_foreign_config_yaml_it_did_not_read(isolated_home: Path, tmp_path: Path) -> None:
    ws = tmp_path / "chart" / "app"
    ws.mkdir(parents=True)
    helm = tmp_path / "chart" / "config.yaml"
    helm.write_text("replicas: {{ .Values.replicas }}\n")
    done = cli("config", "show", "-w", str(ws))
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and str(helm) in notes[0], done.stderr
    assert not [line for line in done.stderr.splitlines() if line.startswith("warning:")], done.stderr


def test_config_show_says_an_empty_deny_list_adds_to_the_built_in_one(isolated_home: Path, tmp_path: Path) -> None:
    ws = tmp_path / "app"
    ws.mkdir()
    (ws / "ai-coding.yaml").write_text("ai:\n  bash_policy:\n    deny: []\n")
    done = cli("config", "show", "-w", str(ws))
    assert done.returncode == 0, done.stderr
    line = next(row for row in done.stdout.splitlines() if row.startswith("ai.bash_policy.deny = "))
    assert line.startswith("ai.bash_policy.deny = []") and "built-in deny list" in line and "always holds" in line
