"""The client stays thin: ``ai-coding --version`` imports none of the heavy service-side packages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = ("openai", "mcp", "opentelemetry", "grpc", "jsonschema")


def test_version_imports_no_openai_mcp_opentelemetry_or_grpc() -> None:
    cli = Path(sys.executable).with_name("ai-coding")
    done = subprocess.run([sys.executable, "-X", "importtime", str(cli), "--version"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.startswith("ai-coding "), done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "services" in imported  # the check sees the imports at all
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
    assert "typer" not in imported and "rich" not in imported  # answered before the command tree exists


def test_the_trace_commands_import_no_opentelemetry() -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "clients.cli.entry", "trace", "overview",
                           "--format", "json", "-w", "/nonexistent-workspace-for-import-check"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "services" in imported and "opentelemetry" not in imported and "grpc" not in imported
