"""The workspace pod and the batch Job of deploy/k8s/, run here as their specs say (see
tests/support/k8s_pod.py: each container's command, env, ports and mounts, with temporary
folders for volumes and a port map for the pod network), against the fake model: an
interactive turn over TLS and the token, and a 3-task batch whose results are collected.
A manifest whose port, env name or mount path does not line up fails these tests."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from tests.support.k8s import K8S, containers, find, load, objects
from tests.support.k8s_pod import Cluster, LocalPod, PodFailed

pytestmark = pytest.mark.slow

EXE = str(Path(sys.executable).parent / "ai-coding")
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def task_steps(tag: str) -> list[dict[str, Any]]:
    """The model's two replies for prompt ``tag``: a bash call in the sandbox, then the answer."""
    return [
        {"name": f"{tag}-edit", "match_first_user": tag,
         "tool_calls": [{"name": "bash", "arguments": {"command": f"echo fixed > {tag}.txt && echo wrote-{tag}"}}]},
        {"name": f"{tag}-answer", "match_first_user": tag, "match": f"wrote-{tag}", "text": f"Fixed {tag}."},
    ]


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    steps = [*task_steps("greeting"), *(s for i in range(3) for s in task_steps(f"issue-{i}")),
             {"name": "farewell", "match": "and now the farewell", "text": "Farewell added."},
             {"name": "anything-else", "text": "[]", "repeat": "forever"}]
    with FakeModelServer({"order": "first_match", "steps": steps}) as server:
        yield server


@pytest.fixture
def tls(tmp_path: Path) -> tuple[str, str]:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout",
                    str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem"), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
    return (tmp_path / "cert.pem").read_text(), (tmp_path / "key.pem").read_text()


@pytest.fixture
def cluster(short_dir: Path, model: FakeModelServer, tls: tuple[str, str]) -> Cluster:
    """The namespace as an operator sets it up: the ConfigMaps as shipped (the model URL edited to
    the fake model's), the Secrets with the keys secret.example.yaml names."""
    made = Cluster(short_dir)
    for obj in objects():
        if obj["kind"] == "ConfigMap":
            made.config_maps[obj["metadata"]["name"]] = dict(obj["data"])
    made.config_maps["ai-coding-model"]["base_url"] = model.url
    values = {"OPENAI_API_KEY": "k", "token": secrets.token_urlsafe(24), "tls.crt": tls[0], "tls.key": tls[1]}
    for obj in load(K8S / "common" / "secret.example.yaml"):
        made.secrets[obj["metadata"]["name"]] = {key: values[key] for key in obj["stringData"]}
    return made


@pytest.fixture
def pods() -> Iterator[list[LocalPod]]:
    started: list[LocalPod] = []
    yield started
    for pod in started:
        pod.down()


def in_pod_status(pod: LocalPod, container: str) -> dict[str, str]:
    """``kubectl exec POD -c CONTAINER -- ai-coding status --json``: each service's health."""
    env, _ = pod.exec_env(container)
    health: dict[str, str] = {}
    for _ in range(3):  # status gives each service 1 s: on a loaded machine ask again before judging
        done = subprocess.run([EXE, "status", "--json"], env=env, capture_output=True, text=True, timeout=60,
                              check=False)
        assert done.stdout.strip(), done.stderr
        health = {name: svc["health"] for name, svc in json.loads(done.stdout)["services"].items()}
        if done.returncode == 0:
            break
    return health


def workspace_pod(cluster: Cluster, pods: list[LocalPod], mutate: Callable[[dict[str, Any]], None] | None = None,
                  probe_scale: float = 1.0) -> LocalPod:
    sts = find(objects([K8S / "workspace" / "workspace.yaml"]), "StatefulSet", "ai-coding-workspace")
    spec = sts["spec"]["template"]["spec"]
    if mutate is not None:
        mutate(spec)
    pod = LocalPod(cluster, "ai-coding-workspace-0", spec,
                   claim_templates=[t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]],
                   probe_scale=probe_scale)
    pods.append(pod)
    pod.up()
    pod.ready()
    health = in_pod_status(pod, "tools")
    sidecars = {n: health[n] for n in ("tools", "memory", "mcp_gateway")}
    if sidecars != {"tools": "SERVING", "memory": "SERVING", "mcp_gateway": "SERVING"}:
        raise PodFailed(f"inside the pod the services are not all reachable on the shared sockets: {sidecars}")
    return pod


def loop_port(pod: LocalPod) -> int:
    """Where `kubectl port-forward svc/ai-coding-workspace 7300` lands: the Service's targetPort."""
    svc = find(objects([K8S / "workspace" / "workspace.yaml"]), "Service", "ai-coding-workspace")
    target = svc["spec"]["ports"][0]["targetPort"]
    for _, c in containers(pod.spec):
        for p in c.get("ports", []):
            if target in (p.get("name"), p["containerPort"]):
                return pod.ports[int(p["containerPort"])]
    raise AssertionError(f"the Service's targetPort {target!r} is no port of the pod")


def user_client(tmp_path: Path, port: int, cert: str, token: str) -> dict[str, str]:
    """An interactive user's machine: the loop over TLS + token, no local services."""
    home = tmp_path / "user"
    (home / "run").mkdir(parents=True, mode=0o700)
    (home / "ca.pem").write_text(cert)
    (home / "config.yaml").write_text(
        f"endpoints:\n  loop: tcp://localhost:{port}\n  auth:\n    tls_ca: {home / 'ca.pem'}\n"
        "supervisor:\n  services: []\n")
    return {"PATH": os.environ["PATH"], "HOME": str(home), "AI_CODING_CONFIG": str(home / "config.yaml"),
            "AI_CODING_RUNTIME_DIR": str(home / "run"), "AI_CODING_TOKEN": token}


def test_the_workspace_pod_runs_a_turn_for_a_user_over_tls_and_the_token(
        cluster: Cluster, pods: list[LocalPod], model: FakeModelServer, tmp_path: Path) -> None:
    pod = workspace_pod(cluster, pods)
    _, mounts = pod.exec_env("loop")
    workspace = dict(mounts)["/workspace"]
    env = user_client(tmp_path, loop_port(pod), cluster.secrets["ai-coding-tls"]["tls.crt"],
                      cluster.secrets["ai-coding-token"]["token"])

    wrong = subprocess.run([EXE, "run", "-w", str(workspace), "fix the greeting"],
                           env={**env, "AI_CODING_TOKEN": "not-the-token"}, capture_output=True, text=True,
                           timeout=120, check=False)
    assert wrong.returncode != 0 and not model.chat_requests, wrong.stderr

    done = subprocess.run([EXE, "run", "--json", "--auto-approve", "-w", str(workspace), "fix the greeting"],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, (done.stderr, pod.dir)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    finished = [e["turnFinished"] for e in events if "turnFinished" in e]
    assert finished[-1]["status"] == "TURN_STATUS_COMPLETED" and finished[-1]["text"] == "Fixed greeting."
    # The command ran in the tools container's sandbox, on the one workspace volume of the pod.
    assert (workspace / "greeting.txt").read_text() == "fixed\n"
    session = events[0]["sessionId"]
    assert (workspace / ".ai-coding" / "sessions" / f"{session}.json").is_file()
    assert (dict(pod.exec_env("tools")[1])["/workspace"]) == workspace

    codes = pod.down()
    assert codes == {"loop": 0, "mcp-gateway": 0, "memory": 0, "tools": 0}

    # The pod is replaced (an update, a node drain): the new one has the same claims, and the
    # user's session continues where it was.
    again = workspace_pod(cluster, pods)
    env["AI_CODING_CONFIG"] = str(Path(env["HOME"]) / "config.yaml")
    (Path(env["HOME"]) / "config.yaml").write_text(
        (Path(env["HOME"]) / "config.yaml").read_text().replace(f":{loop_port(pod)}", f":{loop_port(again)}"))
    more = subprocess.run([EXE, "run", "--json", "--continue", "-w", str(workspace), "and now the farewell"],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert more.returncode == 0, more.stderr
    assert json.loads(more.stdout.splitlines()[0])["sessionId"] == session
    assert [json.loads(line)["turnFinished"]["text"] for line in more.stdout.splitlines()
            if "turnFinished" in line] == ["Farewell added."]
    # A request cut off when the first pod went down is recorded as its raw text: only whole ones count.
    whole = [r for r in model.chat_requests if isinstance(r.body, dict) and r.body.get("messages")]
    request = next(r for r in whole if "and now the farewell" in str(r.body["messages"][-1].get("content")))
    texts = [str(m.get("content")) for m in request.body["messages"]]
    assert any("fix the greeting" in t for t in texts) and any("Fixed greeting." in t for t in texts)


def _set_env(container: str, name: str, value: str) -> Callable[[dict[str, Any]], None]:
    def mutate(spec: dict[str, Any]) -> None:
        c = next(c for _, c in containers(spec) if c["name"] == container)
        next(e for e in c["env"] if e["name"] == name)["value"] = value
    return mutate


def _rename_env(container: str, name: str, new: str) -> Callable[[dict[str, Any]], None]:
    def mutate(spec: dict[str, Any]) -> None:
        c = next(c for _, c in containers(spec) if c["name"] == container)
        next(e for e in c["env"] if e["name"] == name)["name"] = new
    return mutate


def _move_mount(container: str, volume: str, path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(spec: dict[str, Any]) -> None:
        c = next(c for _, c in containers(spec) if c["name"] == container)
        next(m for m in c["volumeMounts"] if m["name"] == volume)["mountPath"] = path
    return mutate


@pytest.mark.parametrize(("mutate", "symptom"), [
    (_set_env("tools", "AI_CODING_HEALTH_PORT", "7399"), "tools: startupProbe never passed"),
    (_rename_env("memory", "AI_CODING_RUNTIME_DIR", "AI_CODING_RUNTIMEDIR"), "'memory': 'UNREACHABLE'"),
    (_move_mount("loop", "tls", "/etc/ai-coding/certs"), "cannot read TLS files"),
], ids=["health-port", "runtime-dir-env-name", "tls-mount-path"])
def test_a_pod_spec_whose_port_env_name_or_mount_path_does_not_line_up_fails(
        cluster: Cluster, pods: list[LocalPod], mutate: Callable[[dict[str, Any]], None], symptom: str) -> None:
    with pytest.raises(PodFailed) as failed:  # a quarter of the spec's probe budget: a probe that never passes
        workspace_pod(cluster, pods, mutate, probe_scale=0.25)
    assert symptom in str(failed.value)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """The repository the tasks name (as a file:// URL: a bare path would be read inside the pod), with one
    commit."""
    root = tmp_path / "upstream"
    root.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "README.md").write_text("project\n")
    subprocess.run([*git, "-C", str(root), "add", "."], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-qm", "start"], check=True)
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    return root, head.stdout.strip()


def test_the_batch_job_runs_three_tasks_in_their_own_pods_and_the_results_are_collected(
        cluster: Cluster, pods: list[LocalPod], model: FakeModelServer, repo: tuple[Path, str]) -> None:
    url, commit = repo
    cluster.config_maps["ai-coding-tasks"]["tasks.yaml"] = "".join(
        f"- {{id: issue-{i}, repo: 'file://{url}', commit: {commit}, prompt: 'Fix issue-{i} please.'}}\n" for i in range(3))
    job = find(objects([K8S / "batch" / "job.yaml"]), "Job", "ai-coding-batch")
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == 3
    batch = [LocalPod(cluster, f"ai-coding-batch-{i}", job["spec"]["template"]["spec"], {COMPLETION_INDEX: str(i)})
             for i in range(3)]
    pods.extend(batch)
    errors: list[BaseException] = []

    def run(pod: LocalPod) -> None:
        try:
            pod.up()
            pod.ready()
            health = in_pod_status(pod, "run")  # kubectl exec POD -c run -- ai-coding status
            assert set(health.values()) == {"SERVING"}, health
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(p,)) for p in batch[: job["spec"]["parallelism"]]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for pod in batch:
        assert pod.wait_main(timeout=300) == {"run": 0}, pod.dir
        assert set(pod.down().values()) == {0}

    results = cluster.claims["ai-coding-batch-results"]
    assert sorted(p.name for p in results.iterdir()) == ["task-0", "task-1", "task-2"]
    for i in range(3):
        folder = results / f"task-{i}"
        record = json.loads((folder / "result.json").read_text())
        assert (record["id"], record["exitStatus"], record["finalText"]) == (f"issue-{i}", 0, f"Fixed issue-{i}.")
        assert f"+++ b/issue-{i}.txt" in (folder / "diff.patch").read_text()
        assert json.loads((folder / "session.json").read_text())
        assert list((folder / "traces").glob("turn-*.jsonl"))
        assert (folder / "events.jsonl").read_text().count("turnFinished") == 1

    # kubectl exec ai-coding-batch-results -- ai-coding batch collect /results
    reader = find(objects([K8S / "batch" / "results.yaml"]), "Pod", "ai-coding-batch-results")
    collector = LocalPod(cluster, "ai-coding-batch-results", reader["spec"])
    env, mounts = collector.exec_env("reader")
    assert dict(mounts)["/results"] == results
    done = subprocess.run([EXE, "batch", "collect", str(dict(mounts)["/results"])], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()
    assert len(rows) == 5 and rows[-1] == "3 task(s): 3 completed, 0 not completed, 0 without a result"
    for i, row in enumerate(rows[1:4]):
        assert row.split()[:5] == [str(i), f"issue-{i}", "0", "completed", "1"] and row.endswith(f"Fixed issue-{i}.")


def test_a_batch_pod_stopped_mid_turn_still_leaves_its_result(
        cluster: Cluster, pods: list[LocalPod], model: FakeModelServer, repo: tuple[Path, str]) -> None:
    url, commit = repo
    model.load_script([{"name": "slow", "text": "never finished", "delay_ms": 60_000}])
    cluster.config_maps["ai-coding-tasks"]["tasks.yaml"] = (
        f"- {{id: slow-task, repo: 'file://{url}', commit: {commit}, prompt: 'Take your time.'}}\n")
    job = find(objects([K8S / "batch" / "job.yaml"]), "Job", "ai-coding-batch")
    pod = LocalPod(cluster, "ai-coding-batch-0", job["spec"]["template"]["spec"], {COMPLETION_INDEX: "0"})
    pods.append(pod)
    pod.up()
    deadline = time.monotonic() + 60
    while not model.chat_requests:  # the turn is waiting on the model
        assert time.monotonic() < deadline, "the task never reached the model"
        time.sleep(0.1)
    codes = pod.down()  # what the kubelet does when the Job is deleted or the node drains
    assert codes["run"] == 0, (pod.dir / "run.log").read_text()
    record = json.loads((cluster.claims["ai-coding-batch-results"] / "task-0" / "result.json").read_text())
    assert record["id"] == "slow-task" and record["exitStatus"] == 143
    assert record["status"] == "TURN_STATUS_INTERRUPTED"
