"""The client stays thin and has one of each: generated protobuf code only at its edge, one turn
driver, one approval-key table, one title function; its turn paths import no model or MCP SDK
(``--version`` itself: tests/unit/cli/test_cli_startup_imports.py)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.support.source_tree import parsed

ROOT = Path(__file__).resolve().parents[3]
CLIENT = ROOT / "clients"
# The gRPC edge and the converter: the only client modules that may name generated protobuf code.
EDGE = {"clients/cli/connection/loop.py", "clients/cli/connection/services.py", "clients/cli/convert.py"}
HEAVY = ("openai", "mcp", "opentelemetry")


def _modules(*roots: Path) -> dict[str, ast.Module]:
    return {str(path.relative_to(ROOT)): parsed(path) for root in roots for path in sorted(root.rglob("*.py"))}


def test_only_the_connection_and_convert_modules_mention_generated_protobuf_code() -> None:
    # What `grep -l _pb2 clients/` lists, comments and docstrings included.
    naming = {str(p.relative_to(ROOT)) for p in CLIENT.rglob("*.py") if "_pb2" in p.read_text(encoding="utf-8")}
    assert naming <= EDGE, f"move the wire code of {sorted(naming - EDGE)} into clients/cli/connection or convert.py"


def _defs(tree: ast.Module) -> set[str]:
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_one_title_function_for_the_loop_and_the_client() -> None:
    defining = sorted(path for path, tree in _modules(CLIENT, ROOT / "services").items() if "tool_title" in _defs(tree))
    assert defining == ["services/kernel/titles.py"]


def test_one_approval_key_table() -> None:
    tables = []
    for path, tree in _modules(CLIENT).items():
        for node in ast.walk(tree):
            keys = {k.value for k in getattr(node, "keys", []) if isinstance(k, ast.Constant)}
            if isinstance(node, ast.Dict) and ({"y", "n"} <= keys or {"y", "s"} <= keys):
                tables.append(path)
    assert tables == ["clients/cli/approvals.py"]


def test_one_turn_driver_starts_and_reads_turn_streams() -> None:
    starting, converse = [], []
    for path, tree in _modules(CLIENT).items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            receiver = node.func.value
            name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
            if node.func.attr == "start" and name == "client":
                starting.append(path)
            if node.func.attr.startswith("Converse"):
                converse.append(path)
    assert sorted(set(starting)) == ["clients/cli/driver.py"]
    assert sorted(set(converse)) == ["clients/cli/connection/loop.py"]


def test_one_option_cycle() -> None:
    defining = [path for path, tree in _modules(CLIENT).items() if "cycle_option" in _defs(tree)]
    assert defining == ["clients/cli/repl/state.py"]


def _imported_by(code: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "protos")])}
    done = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=True)
    return {name.split(".")[0] for name in done.stdout.split()}


def test_the_turn_paths_of_the_client_import_no_model_mcp_or_telemetry_sdk() -> None:
    loaded = _imported_by("import clients.cli.commands.run, clients.cli.turn, clients.cli.repl.app, "
                          "clients.cli.commands.memory, clients.cli.commands.mcp, clients.cli.commands.sessions, "
                          "clients.cli.connection.services")
    assert "grpc" in loaded and not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
