"""The image's Containerfile and build context: what .dockerignore lets in is the package sources
(no .venv, no node_modules), every COPY finds its files there, pip builds the package from exactly
that context, and the image runs non-root with bubblewrap and node."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.k8s import DEPLOY, ROOT, objects, pod_templates

CONTAINERFILE = (DEPLOY / "container" / "Containerfile").read_text()


def _regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + "$")


def excluded(path: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: the last pattern that matches the path, or one of its parents, decides."""
    parents = path.split("/")
    candidates = ["/".join(parents[: n + 1]) for n in range(len(parents))]
    result = False
    for negate, rx in rules:
        if any(rx.match(c) for c in candidates):
            result = not negate
    return result


def context_files() -> list[Path]:
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            negate = line.startswith("!")
            rules.append((negate, _regex(line.lstrip("!").strip("/"))))
    files = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(".git/") or not path.is_file() or path.is_symlink():
            continue
        if not excluded(rel, rules):
            files.append(path)
    return files


def test_the_build_context_is_the_package_sources_only() -> None:
    files = context_files()
    rels = {f.relative_to(ROOT).as_posix() for f in files}
    size = sum(f.stat().st_size for f in files)
    assert "pyproject.toml" in rels and "services/kernel/server.py" in rels and "clients/cli/main.py" in rels
    assert not [r for r in rels if r.startswith((".venv/", "tests/", ".git/", "bench/")) or "node_modules/" in r]
    assert size < 20_000_000, f"build context {size / 1e6:.1f} MB"
    for src in re.findall(r"^COPY (?!--from)(\S+)", CONTAINERFILE, re.M):
        for name in src.split():
            assert any(r == name or r.startswith(name.rstrip("/") + "/") for r in rels), f"COPY {name} finds nothing"


@pytest.mark.slow
def test_pip_builds_the_package_from_exactly_the_build_context(tmp_path: Path) -> None:
    context = tmp_path / "context"
    for f in context_files():
        target = context / f.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.read_bytes())
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "wheels"), str(context)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    [wheel] = (tmp_path / "wheels").glob("ai_coding-*.whl")
    listing = subprocess.run([sys.executable, "-m", "zipfile", "-l", str(wheel)], capture_output=True, text=True,
                             check=True).stdout
    assert "clients/cli/batch/runner.py" in listing and "ai_coding/v1/loop_pb2.py" in listing
    assert "clients/cli/run_events.schema.json" in listing


def test_the_image_runs_non_root_as_the_pods_expect_with_bubblewrap_and_node() -> None:
    final = CONTAINERFILE.split("\nFROM ")[-1]
    user = re.findall(r"^USER (\d+):(\d+)$", final, re.M)
    assert user and user[-1][0] != "0"
    for t in pod_templates(objects()):
        assert str(t.spec["securityContext"]["runAsUser"]) == user[-1][0], t.owner
    apt = re.search(r"apt-get install[^\n]*", final)
    assert apt and {"bubblewrap", "nodejs", "npm", "git", "ripgrep"} <= set(apt.group(0).split())
    assert re.search(r'^ENTRYPOINT \["ai-coding"\]$', final, re.M)
