"""`ai-coding memory ...` against the real memory service, as a script would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from ai_coding.v1 import memory_pb2 as pb

from tests.service.memory.memory_harness import REPO, ServiceProcess, running_service


@pytest.fixture(scope="module")
def service() -> Iterator[ServiceProcess]:
    with running_service() as svc:
        yield svc


def cli(service: ServiceProcess, *args: str, stdin: str = "", **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_CODING_")}
    env.update(HOME=str(service.root / "home"), XDG_CONFIG_HOME=str(service.root / "home" / ".config"),
               AI_CODING_RUNTIME_DIR=str(service.root / "run"), AI_CODING_MEMORY_ENDPOINT=service.address,
               **extra_env)
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", "memory", *args], cwd=REPO, env=env,
                          input=stdin, capture_output=True, text=True, timeout=60)


def test_list_search_show_pin_and_forget_from_the_command_line(service: ServiceProcess) -> None:
    with tempfile.TemporaryDirectory() as ws:
        ids = [service.stub.WriteNote(pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(text=t, kind=k)),
                                      timeout=10).note.id
               for t, k in (("Dependencies are managed with uv", "decision"), ("CI runs on GitHub Actions", "fact"))]
        listed = cli(service, "list", "-w", ws)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.index("decision (1)") < listed.stdout.index(ids[0])
        assert "fact (1)" in listed.stdout
        assert "evidence: model=2" in listed.stdout  # memory_write notes carry evidence "model"

        found = cli(service, "search", "how are dependencies managed", "-w", ws, "--json")
        data = json.loads(found.stdout)
        assert [h["note"]["id"] for h in data["hits"]] == [ids[0]]
        assert service.stub.GetNote(pb.GetNoteRequest(workspace=ws, id=ids[0]), timeout=10).note.hits == 0

        assert json.loads(cli(service, "show", ids[1], "-w", ws, "--json").stdout)["text"] == "CI runs on GitHub Actions"
        assert cli(service, "pin", ids[1], "-w", ws).returncode == 0
        assert service.stub.GetNote(pb.GetNoteRequest(workspace=ws, id=ids[1]), timeout=10).note.pinned

        kept = cli(service, "forget", ids[1], "-w", ws, stdin="n\n")
        assert "kept" in kept.stdout
        assert cli(service, "forget", ids[1], "-w", ws, "--yes").returncode == 0
        missing = cli(service, "show", ids[1], "-w", ws)
        assert missing.returncode == 2 and "note_not_found" in missing.stderr and "Traceback" not in missing.stderr


def test_an_unreachable_service_is_one_line_and_exit_code_3(service: ServiceProcess, tmp_path: Path) -> None:
    # A memory service this machine does not run (the supervisor would start a local one).
    config = tmp_path / "config.yaml"
    config.write_text("supervisor:\n  services: [loop, tools, mcp_gateway]\n")
    dead = ServiceProcess(service.proc, "unix:/tmp/aic-no-such.sock", service.stub, service.channel, service.root,
                          service.log)
    got = cli(dead, "list", AI_CODING_CONFIG=str(config))
    assert got.returncode == 3
    assert got.stderr.strip() == ("ai-coding memory list: the memory service at unix:///tmp/aic-no-such.sock is not "
                                  "answering (it runs on another host: start it there with `ai-coding serve memory`)."), \
        got.stderr
