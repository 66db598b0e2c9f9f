"""Request size of the three-command fix task: tool-schema bytes per request, against a target and
the base commit, in one run.

    .venv/bin/python bench/request_size.py [--base 08ff9f8]

Each tree (the base revision checked out in a temporary worktree, then this one; bench/baseline.py)
runs the fix task the way a user does: ``ai-coding up`` with the default config (memory, the MCP
gateway, every default feature), then ``ai-coding run --auto-approve`` against the fake model,
which records every request body. Prints per tree the tools offered on the first request, the
tool-schema bytes per request (``json.dumps`` of the request's ``tools``, mean and first) next to
the 6,000-byte target, and the whole request's bytes per step.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

import yaml  # noqa: E402

from bench.baseline import Tree, load, trees  # noqa: E402
from bench.loop import FIX_SCRIPT  # noqa: E402
from services.fake_model import FakeModelServer  # noqa: E402

TARGET_TOOL_BYTES = 6_000


@dataclass(frozen=True)
class Sizes:
    """What one tree's fix task sent, per chat request."""

    tools: list[str]
    tool_bytes: list[int]
    request_bytes: list[int]
    fixed: bool


def fix_task(tree: Tree, base: Path) -> Sizes:
    """Run the fix task with ``tree``'s services and client; the fake model's recorded requests."""
    home = Path(tempfile.mkdtemp(dir=base))
    run_dir = Path(tempfile.mkdtemp(prefix="aicq-", dir="/tmp"))
    ws = home / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (ws / "test_calc.py").write_text("from calc import add\nassert add(2, 3) == 5\nprint('ok')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_CODING_")}
    env = tree.env({**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                    "AI_CODING_RUNTIME_DIR": str(run_dir)})
    with FakeModelServer(FIX_SCRIPT) as fake:
        # The default config but the model (and no harvest: its extra request is not a step).
        cfg = {"default_model": "fake", "loop": {"harvest": False}, "models": {"fake": {
            "provider": "generic", "base_url": fake.url, "model": "fake-model", "api_key": "k"}}}
        (home / ".config" / "ai-coding").mkdir(parents=True, mode=0o700)
        (home / ".config" / "ai-coding" / "config.yaml").write_text(yaml.safe_dump(cfg))
        try:
            up = subprocess.run(tree.cli("up"), env=env, cwd=home, capture_output=True, timeout=180)
            if up.returncode != 0:
                raise SystemExit(f"[{tree.label}] ai-coding up failed: {up.stdout.decode()[-300:]} "
                                 f"{up.stderr.decode()[-300:]}")
            done = subprocess.run(tree.cli("run", "--auto-approve", "-w", str(ws), "fix the failing test"),
                                  env=env, cwd=home, capture_output=True, timeout=180)
            if done.returncode != 0:
                print(f"[{tree.label}] ai-coding run exited {done.returncode}: {done.stderr.decode()[-300:]}")
        finally:
            subprocess.run(tree.cli("down"), env=env, cwd=home, capture_output=True, timeout=120)
            shutil.rmtree(run_dir, ignore_errors=True)
        chat = [r.body for r in fake.chat_requests if isinstance(r.body, dict)]
    return Sizes(tools=[t["function"]["name"] for t in (chat[0].get("tools") or [])] if chat else [],
                 tool_bytes=[len(json.dumps(b.get("tools") or [])) for b in chat],
                 request_bytes=[len(json.dumps(b)) for b in chat],
                 fixed="a + b" in (ws / "calc.py").read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="08ff9f8", help="commit measured beside this tree ('' for none)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-request-"))
    try:
        with trees(args.base) as checkouts:
            measured = {tree.label: fix_task(tree, work) for tree in checkouts}
        print(f"request size of the three-command fix task ({load()})")
        head = measured["head"]
        for label, sizes in measured.items():
            if not sizes.tool_bytes:
                print(f"  {label}: no request reached the model")
                continue
            print(f"  {label}: {len(sizes.tools)} tools on the first request: {', '.join(sizes.tools)}")
            print(f"  {label}: tool-schema bytes per request: mean {statistics.mean(sizes.tool_bytes):,.0f}, "
                  f"first {sizes.tool_bytes[0]:,} (target < {TARGET_TOOL_BYTES:,}); whole request mean "
                  f"{statistics.mean(sizes.request_bytes):,.0f} over {len(sizes.request_bytes)} requests"
                  f"{'' if sizes.fixed else '; the task did NOT fix calc.py'}")
        if args.base and measured[args.base].tool_bytes and head.tool_bytes:
            old, new = statistics.mean(measured[args.base].tool_bytes), statistics.mean(head.tool_bytes)
            print(f"tool-schema bytes per request: head {new:,.0f} vs {args.base} {old:,.0f} "
                  f"({new / old:.2f}x), target < {TARGET_TOOL_BYTES:,}: "
                  f"{'met' if new < TARGET_TOOL_BYTES else 'NOT met'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
