"""Run a pod spec from deploy/k8s/ on this machine, the way the kubelet would, minus the kernel
namespaces: each container's command (the image's ENTRYPOINT + ``args``, ``$(VAR)`` expanded)
runs as a process with exactly the environment the spec gives it (values, Secret and ConfigMap
keys, downward-API annotations); every volume is a temporary folder (emptyDir, ConfigMap and
Secret files, claims), and each container sees only its own mounts: any path under one of its
``mountPath``s, in its args, env or mounted ConfigMap files, is rewritten to the folder behind
that mount, and nothing else is. The pod's network namespace is a port map: every declared
``containerPort`` is given a free local port, and env values naming it are rewritten to match.

Start order, probes and stop order follow the kubelet: init containers run to completion in
order, each native sidecar (``restartPolicy: Always``) must pass its startup probe before the
next one starts, then the main containers; grpc probes ask grpc.health.v1 in plaintext on the
probe's port; SIGTERM goes to the main containers first, then to the sidecars in reverse order.

A manifest whose port, env name or mount path does not line up fails here: a process exits, a
probe never passes, or a path the config names is not mounted.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.k8s import Obj, containers, image_entrypoint

BIN = Path(sys.executable).parent
_VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


class PodFailed(AssertionError):
    """The pod could not start or run as specified (the message says which container and why)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def expand_refs(text: str, env: dict[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: a known variable is replaced, an unknown one left as is."""
    return _VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), text)


def translate(text: str, mounts: list[tuple[str, Path]]) -> str:
    """Rewrite every path under a mountPath (the longest that matches) to the folder behind it, in
    one pass (a folder's own path is never rewritten again)."""
    if not mounts:
        return text
    hosts = {m.rstrip("/"): str(h) for m, h in mounts}
    alternatives = "|".join(re.escape(m) for m in sorted(hosts, key=len, reverse=True))
    pattern = r"(?<![\w.\-/])(" + alternatives + r")(?=$|[/\s\"',:;])"
    return re.sub(pattern, lambda m: hosts[m.group(1)], text)


def grpc_health(port: int, service: str = "", timeout: float = 2.0) -> str:
    """A kubelet ``grpc:`` probe: plaintext, no token, grpc.health.v1 Check."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            resp = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as err:
            return str(err.code().name)
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))


@dataclass
class Cluster:
    """What the pods of a test share: the namespace's ConfigMaps and Secrets, the claims."""

    root: Path
    config_maps: dict[str, dict[str, str]] = field(default_factory=dict)
    secrets: dict[str, dict[str, str]] = field(default_factory=dict)
    claims: dict[str, Path] = field(default_factory=dict)

    def claim(self, name: str) -> Path:
        if name not in self.claims:
            self.claims[name] = self.root / "claims" / name
            self.claims[name].mkdir(parents=True)
        return self.claims[name]


@dataclass
class Running:
    name: str
    role: str
    proc: subprocess.Popen[bytes]
    log: Path


class LocalPod:
    """One pod of ``spec`` (name ``name``, annotations as the controller sets them)."""

    def __init__(self, cluster: Cluster, name: str, spec: Obj, annotations: dict[str, str] | None = None,
                 claim_templates: list[str] | None = None, base_env: dict[str, str] | None = None,
                 probe_scale: float = 1.0) -> None:
        self.cluster, self.name, self.spec = cluster, name, spec
        self.annotations = annotations or {}
        self.dir = cluster.root / "pods" / name
        restart = 0
        while self.dir.exists():  # the same pod again (a StatefulSet replaces it under its name)
            restart += 1
            self.dir = cluster.root / "pods" / f"{name}.{restart}"
        self.dir.mkdir(parents=True)
        self.base_env = base_env or {}
        self.probe_scale = probe_scale
        self.ports: dict[int, int] = {}
        for _, c in containers(spec):
            for p in c.get("ports", []):
                self.ports.setdefault(int(p["containerPort"]), free_port())
        self.volumes: dict[str, Path] = {}
        self._volume_specs = {v["name"]: v for v in spec.get("volumes", [])}
        for template in claim_templates or []:  # a StatefulSet's per-pod claims: <template>-<pod>
            self.volumes[template] = cluster.claim(f"{template}-{name}")
        self.running: list[Running] = []

    # ---- volumes and mounts ----

    def _volume(self, name: str, container: str) -> Path:
        spec = self._volume_specs.get(name)
        if spec is None:
            if name in self.volumes:
                return self.volumes[name]
            raise PodFailed(f"{self.name}/{container}: volumeMount {name!r} names no volume of the pod")
        if "configMap" in spec:  # per container: its files' paths are rewritten to its own mounts
            return self.dir / "volumes" / f"{name}@{container}"
        if name in self.volumes:
            return self.volumes[name]
        path = self.dir / "volumes" / name
        if "emptyDir" in spec:
            path.mkdir(parents=True)
            os.chmod(path, 0o2777)  # as the kubelet leaves it with an fsGroup: setgid, open to the pod
        elif "secret" in spec:
            data = self.cluster.secrets.get(spec["secret"]["secretName"])
            if data is None:
                raise PodFailed(f"{self.name}: Secret {spec['secret']['secretName']!r} does not exist")
            path.mkdir(parents=True)
            for key, value in data.items():
                (path / key).write_text(value)
                os.chmod(path / key, int(spec["secret"].get("defaultMode", 0o644)))
        elif "persistentVolumeClaim" in spec:
            path = self.cluster.claim(spec["persistentVolumeClaim"]["claimName"])
        else:
            raise PodFailed(f"{self.name}: volume {name!r} is of a kind this runner does not know")
        self.volumes[name] = path
        return path

    def mounts(self, container: Obj, env: dict[str, str]) -> list[tuple[str, Path]]:
        out: list[tuple[str, Path]] = []
        for m in container.get("volumeMounts", []):
            host = self._volume(m["name"], container["name"])
            sub = m.get("subPath") or expand_refs(m.get("subPathExpr", ""), env)
            if _VAR_REF.search(sub):
                raise PodFailed(f"{self.name}/{container['name']}: subPathExpr {sub!r} names an unset variable")
            if sub:
                host = host / sub
            out.append((m["mountPath"], host))
        return out

    def _write_config_maps(self, container: Obj, mounts: list[tuple[str, Path]]) -> None:
        for m in container.get("volumeMounts", []):
            spec = self._volume_specs.get(m["name"], {})
            if "configMap" not in spec:
                continue
            data = self.cluster.config_maps.get(spec["configMap"]["name"])
            if data is None:
                raise PodFailed(f"{self.name}: ConfigMap {spec['configMap']['name']!r} does not exist")
            path = self.dir / "volumes" / f"{m['name']}@{container['name']}"
            path.mkdir(parents=True, exist_ok=True)
            for key, value in data.items():
                (path / key).write_text(translate(value, mounts))

    # ---- env ----

    def _port(self, text: str) -> str:
        for declared, local in self.ports.items():
            text = re.sub(rf"(?<![\d.]){declared}(?!\d)", str(local), text)
        return text

    def env(self, container: Obj) -> dict[str, str]:
        env: dict[str, str] = {}
        for e in container.get("env", []):
            if "value" in e:
                env[e["name"]] = self._port(expand_refs(str(e["value"]), env))
                continue
            source = e["valueFrom"]
            if "secretKeyRef" in source:
                ref = source["secretKeyRef"]
                value = self.cluster.secrets.get(ref["name"], {}).get(ref["key"])
            elif "configMapKeyRef" in source:
                ref = source["configMapKeyRef"]
                value = self.cluster.config_maps.get(ref["name"], {}).get(ref["key"])
            elif "fieldRef" in source:
                match = re.fullmatch(r"metadata\.annotations\['(.+)'\]", source["fieldRef"]["fieldPath"])
                value = self.annotations.get(match.group(1)) if match else None
            else:
                value = None
            if value is None:
                raise PodFailed(f"{self.name}/{container['name']}: env {e['name']} refers to nothing that exists")
            env[e["name"]] = value
        return env

    # ---- processes ----

    def start(self, container: Obj, role: str) -> Running:
        name = container["name"]
        env = self.env(container)
        mounts = self.mounts(container, env)
        for _, host in mounts:
            host.mkdir(parents=True, exist_ok=True)
        self._write_config_maps(container, mounts)
        private = self.dir / "containers" / name  # the container's own root filesystem
        private.mkdir(parents=True)
        entry, workdir = image_entrypoint()
        argv = [*(container.get("command") or entry), *container.get("args", [])]
        argv = [translate(expand_refs(a, env), mounts) for a in argv]
        if argv[0] == "ai-coding":
            argv[0] = str(BIN / "ai-coding")
        elif argv[0] == "sleep":
            pass
        else:
            raise PodFailed(f"{self.name}/{name}: runs {argv[0]!r}, which the image does not provide")
        full_env = {"PATH": f"{BIN}:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(private / "home"),
                    "XDG_RUNTIME_DIR": str(private / "run"), "TMPDIR": str(private / "tmp"),
                    **self.base_env}
        full_env.update({k: translate(v, mounts) for k, v in env.items()})
        tmp = dict(mounts).get("/tmp")
        if tmp is not None:
            full_env["TMPDIR"] = str(tmp)
        for key in ("HOME", "XDG_RUNTIME_DIR", "TMPDIR"):
            Path(full_env[key]).mkdir(parents=True, exist_ok=True)
        cwd = Path(translate(workdir, mounts))
        if not cwd.is_dir():
            cwd = private
        log = self.dir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, env=full_env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        running = Running(name, role, proc, log)
        self.running.append(running)
        return running

    def _tail(self, running: Running) -> str:
        text = running.log.read_text(errors="replace").strip().splitlines()
        return " | ".join(text[-5:])

    def probe(self, container: Obj, kind: str) -> str:
        probe = container.get(kind)
        if probe is None:
            return "SERVING"
        if "grpc" not in probe:
            raise PodFailed(f"{self.name}/{container['name']}: {kind} is not a grpc probe")
        port = int(probe["grpc"]["port"])
        if port not in self.ports:
            raise PodFailed(f"{self.name}/{container['name']}: {kind} port {port} is no containerPort of the pod")
        return grpc_health(self.ports[port], probe["grpc"].get("service", ""))

    def wait_probe(self, container: Obj, running: Running, kind: str) -> None:
        probe = container.get(kind) or {}
        budget = float(probe.get("periodSeconds", 10)) * int(probe.get("failureThreshold", 3)) * self.probe_scale
        deadline = time.monotonic() + max(budget, 5.0)
        answer = ""
        while time.monotonic() < deadline:
            if running.proc.poll() is not None:
                raise PodFailed(f"{self.name}/{running.name} exited {running.proc.returncode} before its "
                                f"{kind} passed: {self._tail(running)}")
            answer = self.probe(container, kind)
            if answer == "SERVING":
                return
            time.sleep(0.2)
        raise PodFailed(f"{self.name}/{running.name}: {kind} never passed (last answer {answer}): "
                        f"{self._tail(running)}")

    def up(self) -> None:
        """Init containers to completion, sidecars one by one (startup probe), then the main ones."""
        for role, c in containers(self.spec):
            if role == "main":
                continue
            running = self.start(c, role)
            if role == "init":
                code = running.proc.wait(timeout=300)
                if code != 0:
                    raise PodFailed(f"{self.name}/{c['name']} (init) exited {code}: {self._tail(running)}")
            else:
                self.wait_probe(c, running, "startupProbe")
        for role, c in containers(self.spec):
            if role == "main":
                running = self.start(c, role)
                if "startupProbe" in c:
                    self.wait_probe(c, running, "startupProbe")

    def ready(self) -> None:
        """Every running container passes its readiness probe (the pod is Ready)."""
        for role, c in containers(self.spec):
            if role != "init":
                running = next(r for r in self.running if r.name == c["name"])
                self.wait_probe(c, running, "readinessProbe")

    def wait_main(self, timeout: float) -> dict[str, int]:
        """Wait for the main containers to exit (a Job pod); their exit codes."""
        codes = {}
        for r in self.running:
            if r.role == "main":
                try:
                    codes[r.name] = r.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    raise PodFailed(f"{self.name}/{r.name} still runs after {timeout:.0f}s: {self._tail(r)}") from None
        return codes

    def down(self) -> dict[str, int]:
        """SIGTERM main containers, then sidecars in reverse order; exit codes (killed after the grace)."""
        grace = float(self.spec.get("terminationGracePeriodSeconds", 30))
        order = [r for r in self.running if r.role == "main"] + [r for r in reversed(self.running) if r.role == "sidecar"]
        codes: dict[str, int] = {}
        for r in order:
            if r.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    r.proc.send_signal(signal.SIGTERM)
                try:
                    r.proc.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(r.proc.pid, signal.SIGKILL)
                    r.proc.wait()
            codes[r.name] = r.proc.returncode
        return codes

    def exec_env(self, container_name: str) -> tuple[dict[str, str], list[tuple[str, Path]]]:
        """The env and mounts a ``kubectl exec`` into ``container_name`` would see."""
        c = next(c for _, c in containers(self.spec) if c["name"] == container_name)
        env = self.env(c)
        mounts = self.mounts(c, env)
        private = self.dir / "containers" / container_name
        full = {"PATH": f"{BIN}:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(private / "home"),
                "XDG_RUNTIME_DIR": str(private / "run"), **self.base_env}
        full.update({k: translate(v, mounts) for k, v in env.items()})
        return full, mounts


def cleanup(pods: list[LocalPod]) -> None:
    for pod in pods:
        pod.down()


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


Json = Any
