"""policy.turn.decide() is the only producer of a turn's status (a static check over the product)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.source_tree import parsed

ROOT = Path(__file__).resolve().parents[3]
DECIDER = Path("services/loop/policy/turn.py")
# Maps a status to its proto enum or its handoff wording: reads, never chooses one.
# decide()'s unwrap (policy.turn.status_of), under its name or the pipeline's former private one.
UNWRAPS = frozenset({"status_of", "_status"})
TABLES = {Path("services/loop/convert.py"), Path("services/loop/policy/handoff.py")}


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _decided_names(function: ast.AST) -> set[str]:
    """Names that ``function`` binds only from ``status_of(...)`` (the unwrap of decide())."""
    bound: dict[str, bool] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            targets = node.targets[0].elts if isinstance(node.targets[0], ast.Tuple) else node.targets
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for target, value in zip(targets, values, strict=False):
                if isinstance(target, ast.Name):
                    ok = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in UNWRAPS
                    bound[target.id] = bound.get(target.id, True) and ok
    return {name for name, ok in bound.items() if ok}


def violations(source: str, path: Path) -> list[str]:
    """Places in ``source`` that choose a turn status instead of taking decide()'s."""
    return violations_in(ast.parse(source), path)


def violations_in(tree: ast.Module, path: Path) -> list[str]:
    """Places in ``tree`` (the module at ``path``) that choose a turn status instead of taking decide()'s."""
    parents = _parents(tree)
    # The turn's Status under the name this module gives it (another library's Status is not ours).
    names = {alias.asname or alias.name for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module == "services.loop.policy.turn"
             for alias in node.names if alias.name == "Status"}
    found: list[str] = []
    for node in ast.walk(tree):
        where = f"{path}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "TurnFinished":
            status = next((k.value for k in node.keywords if k.arg == "status"), None)
            function: ast.AST = node
            while function in parents and not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                function = parents[function]
            from_decide = isinstance(status, ast.Call) and isinstance(status.func, ast.Name) and (
                status.func.id in UNWRAPS)
            if isinstance(status, ast.Name) and status.id in _decided_names(function):
                from_decide = True
            if not from_decide:
                found.append(f"{where}: TurnFinished with a status that is not decide()'s")
        if path == DECIDER:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            found.append(f"{where}: Status(...) built from a value")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names:
            up: ast.AST = node
            parent = parents.get(node)
            while parent is not None and not isinstance(parent, ast.Compare | ast.stmt):
                if isinstance(parent, ast.Dict) and up in parent.keys and path in TABLES:
                    break
                if isinstance(parent, ast.MatchValue):  # ``case Status.X:`` reads a status, as == does
                    break
                up, parent = parent, parents.get(parent)
            else:
                if not isinstance(parent, ast.Compare):
                    found.append(f"{where}: Status.{node.attr} chosen outside decide()")
        if isinstance(node, ast.keyword) and node.arg == "status" and isinstance(node.value, ast.Constant) and (
                node.value.value in {"completed", "failed", "timeout", "interrupted", "budget", "approval_stop",
                                     "max_iterations"}):
            found.append(f"{where}: status={node.value.value!r} spelled out")
    return found


def test_no_module_but_the_turn_policy_chooses_a_turn_status() -> None:
    checked = 0
    found: list[str] = []
    for package in ("services", "clients"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
                continue
            relative = path.relative_to(ROOT)
            found += violations_in(parsed(path), relative)
            checked += 1
    assert checked > 100
    assert not found, "\n".join(found)


def test_the_check_catches_a_status_chosen_by_hand() -> None:
    ours = "from services.loop.policy.turn import Status\n"
    crash = ours + 'def crashed():\n    emit(TurnFinished(status=Status.FAILED, text="", reason="boom"))\n'
    assert len(violations(crash, Path("services/loop/session/runtime.py"))) == 2
    spelled = 'def end():\n    emit(TurnFinished(status="failed"))\n'
    assert len(violations(spelled, Path("services/loop/turn/pipeline.py"))) == 2
    rebound = ours + 'def end(d):\n    status = _status(d)\n    status = Status.COMPLETED\n    emit(TurnFinished(status=status))\n'
    assert len(violations(rebound, Path("services/loop/turn/pipeline.py"))) == 2
    table = ours + 'NAMES = {Status.FAILED: "engine error"}\nok = s is Status.COMPLETED\n'
    assert violations(table, Path("services/loop/policy/handoff.py")) == []
    assert len(violations(table, Path("services/loop/tracing/writer.py"))) == 1
    matched = ours + "def name(s):\n    match s:\n        case Status.FAILED | Status.TIMEOUT:\n            return 1\n"
    assert violations(matched, Path("services/loop/subagents/packet.py")) == []
    chosen_in_case = ours + "def name(s):\n    match s:\n        case 1:\n            return Status.FAILED\n"
    assert len(violations(chosen_in_case, Path("services/loop/subagents/packet.py"))) == 1
    otel = "from opentelemetry.trace import Status\nstatus = Status(code)\n"
    assert violations(otel, Path("services/loop/tracing/live.py")) == []
