"""The Kubernetes manifests under deploy/k8s/ as data: files, objects, pod templates, containers.

Shared by the manifest rule checks (tests/unit/deploy) and the test that runs the pod specs
locally (tests/e2e/test_deploy_k8s_pods.py).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"

Obj = dict[str, Any]


def manifest_files() -> list[Path]:
    """Every Kubernetes object file (kustomize's own files and the node profiles aside)."""
    return sorted(p for p in K8S.rglob("*.yaml") if p.name != "kustomization.yaml" and "node" not in p.parts)


def load(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def objects(paths: list[Path] | None = None) -> list[Obj]:
    return [doc for p in (paths if paths is not None else manifest_files()) for doc in load(p)]


def find(objs: list[Obj], kind: str, name: str) -> Obj:
    for obj in objs:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return copy.deepcopy(obj)
    raise AssertionError(f"no {kind} {name} in deploy/k8s")


@dataclass
class PodTemplate:
    """A pod spec and how many pods may run it at once."""

    owner: str
    meta: Obj
    spec: Obj
    pods: int
    claim_templates: list[str] = field(default_factory=list)


def pod_templates(objs: list[Obj]) -> list[PodTemplate]:
    out: list[PodTemplate] = []
    for obj in objs:
        kind, name = obj["kind"], obj["metadata"]["name"]
        spec = obj.get("spec", {})
        if kind == "Pod":
            out.append(PodTemplate(f"Pod/{name}", obj["metadata"], spec, 1))
        elif kind in ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"):
            templates = [t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])]
            out.append(PodTemplate(f"{kind}/{name}", spec["template"]["metadata"], spec["template"]["spec"],
                                   int(spec.get("replicas", 1)), templates))
        elif kind == "Job":
            pods = min(int(spec.get("parallelism", 1)), int(spec.get("completions", 1)))
            out.append(PodTemplate(f"Job/{name}", spec["template"]["metadata"], spec["template"]["spec"], pods))
        elif kind == "CronJob":
            raise AssertionError("no CronJob is expected in deploy/k8s")
    return out


def containers(spec: Obj) -> Iterator[tuple[str, Obj]]:
    """``(role, container)``: role is init, sidecar (restartable init container) or main."""
    for c in spec.get("initContainers", []):
        yield ("sidecar" if c.get("restartPolicy") == "Always" else "init"), c
    for c in spec.get("containers", []):
        yield "main", c


def env_value(container: Obj, name: str) -> str | None:
    for e in container.get("env", []):
        if e["name"] == name:
            return str(e["value"]) if "value" in e else None
    return None


def annotation_list(meta: Obj, key: str) -> list[str]:
    raw = str(meta.get("annotations", {}).get(key, ""))
    return [s.strip() for s in raw.split(",") if s.strip()]


def image_entrypoint() -> tuple[list[str], str]:
    """The Containerfile's ENTRYPOINT and WORKDIR (the last of each): what a container without
    ``command`` runs, and where."""
    text = (DEPLOY / "container" / "Containerfile").read_text(encoding="utf-8")
    entry = [json.loads(m) for m in re.findall(r"^ENTRYPOINT\s+(\[.*\])\s*$", text, re.M)][-1]
    workdir = re.findall(r"^WORKDIR\s+(\S+)\s*$", text, re.M)[-1]
    return [str(x) for x in entry], workdir
