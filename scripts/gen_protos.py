"""Regenerate the protobuf/gRPC Python code and .pyi stubs from protos/.

Run from anywhere: ``python scripts/gen_protos.py``. The output is committed; a
test (tests/unit/test_generated_code.py) fails when regenerating changes it. It also
regenerates the ``run --json`` schema and docs/events.md (scripts/gen_event_schema.py).
``--check`` regenerates into a temp dir and exits 1 on any difference.
"""

from __future__ import annotations

import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
PACKAGE = PROTO_ROOT / "ai_coding" / "v1"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


def generate(out_root: Path) -> None:
    """Run protoc for every .proto under protos/ai_coding/v1 into out_root."""
    import grpc_tools

    include = Path(grpc_tools.__file__).parent / "_proto"
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PACKAGE.glob("*.proto"))
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        f"--mypy_out={out_root}",
        f"--mypy_grpc_out={out_root}",
        *protos,
    ]
    plugin_dir = Path(sys.executable).parent
    import os

    env_path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{plugin_dir}{os.pathsep}{env_path}"
    rc = protoc.main(args)
    if rc != 0:
        raise SystemExit(f"protoc failed with exit code {rc}")


def generated_files(root: Path) -> list[Path]:
    pkg = root / "ai_coding" / "v1"
    return sorted(p for p in pkg.iterdir() if p.name.endswith(GENERATED_SUFFIXES))


def check() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / "ai_coding" / "v1").mkdir(parents=True)
        generate(out)
        fresh = {p.name: p for p in generated_files(out)}
        committed = {p.name: p for p in generated_files(PROTO_ROOT)}
        if set(fresh) != set(committed):
            print(f"generated file set differs: {sorted(set(fresh) ^ set(committed))}")
            return 1
        stale = [n for n in fresh if not filecmp.cmp(fresh[n], committed[n], shallow=False)]
        if stale:
            print(f"stale generated files (run scripts/gen_protos.py): {stale}")
            return 1
    return 0


def main() -> int:
    if "--check" in sys.argv:
        return check()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / "ai_coding" / "v1").mkdir(parents=True)
        generate(out)
        for old in generated_files(PROTO_ROOT):
            old.unlink()
        for new in generated_files(out):
            shutil.copy2(new, PACKAGE / new.name)
    # The run --json schema and docs/events.md follow the TurnEvent message (a fresh process
    # imports the code just written).
    import subprocess

    return subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_event_schema.py")], check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
