"""deploy/k8s/ read as an operator (and the API server) would: every object valid against pinned
Kubernetes schemas, and our own rules: one pod per claim of workspace state, at most one replica
of it, every container non-root with requests and limits, the Pod Security fields each container
claims, and the tools container without a service-account token, secrets or network."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from services.kernel import __version__
from tests.support.k8s import (
    DEPLOY,
    K8S,
    PodTemplate,
    annotation_list,
    containers,
    env_value,
    find,
    load,
    manifest_files,
    objects,
    pod_templates,
)

# The oldest version whose features the pods use (native sidecars GA, user-namespaced pods on by
# default) and the newest the validator ships.
KUBERNETES_VERSIONS = ("1.33.0", "1.37.0")
IMAGE = re.compile(r"^[a-z0-9.-]+(:\d+)?(/[a-z0-9._-]+)+:(\d+\.\d+\.\d+)$")
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}
RESTRICTED = "ai-coding.dev/pod-security-restricted"
BASELINE = "ai-coding.dev/pod-security-baseline"


def templates() -> list[PodTemplate]:
    return pod_templates(objects())


def all_containers() -> list[tuple[PodTemplate, str, dict[str, Any]]]:
    return [(t, role, c) for t in templates() for role, c in containers(t.spec)]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: str(p.relative_to(K8S)))
def test_every_manifest_is_valid_against_the_pinned_kubernetes_schemas(path: Path, version: str) -> None:
    for doc in load(path):
        kubernetes_validate.validate(doc, version, strict=True)


def test_a_misspelt_field_is_caught_by_the_schema_check() -> None:
    sts = find(objects(), "StatefulSet", "ai-coding-workspace")
    sts["spec"]["template"]["spec"]["containers"][0]["securityContxt"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(sts, KUBERNETES_VERSIONS[0], strict=True)


def test_each_kustomization_lists_every_manifest_of_its_folder() -> None:
    for kustomization in K8S.rglob("kustomization.yaml"):
        listed = yaml.safe_load(kustomization.read_text())
        if listed["kind"] == "Component":
            continue
        files = {r for r in listed["resources"] if r.endswith(".yaml")}
        here = {p.name for p in kustomization.parent.glob("*.yaml")} - {"kustomization.yaml", "secret.example.yaml"}
        assert files == here, kustomization
        for ref in set(listed["resources"]) - files:
            assert (kustomization.parent / ref / "kustomization.yaml").is_file(), (kustomization, ref)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="rendering the overlays needs kubectl (kustomize)")
@pytest.mark.parametrize("overlay", ["workspace", "batch"])
@pytest.mark.parametrize("gvisor", [False, True], ids=["runc", "gvisor"])
def test_the_overlays_render_with_kustomize_and_stay_valid(overlay: str, gvisor: bool, tmp_path: Path) -> None:
    target = K8S / overlay
    if gvisor:  # a user's overlay on top, as deploy/README.md says
        target = K8S / f".test-{overlay}-gvisor"
        target.mkdir()
        (target / "kustomization.yaml").write_text(
            f"resources: [../{overlay}]\ncomponents: [../components/gvisor]\n")
    try:
        out = subprocess.run(["kubectl", "kustomize", str(target)], capture_output=True, text=True, check=True).stdout
    finally:
        if gvisor:
            shutil.rmtree(target)
    docs = [d for d in yaml.safe_load_all(out) if d]
    for doc in docs:
        kubernetes_validate.validate(doc, KUBERNETES_VERSIONS[0], strict=True)
    [pod] = [t for t in pod_templates(docs) if any(c["name"] == "tools" for _, c in containers(t.spec))]
    tools = next(c for _, c in containers(pod.spec) if c["name"] == "tools")
    namespace = next(d for d in docs if d["kind"] == "Namespace")["metadata"]["labels"]
    if gvisor:
        assert pod.spec["runtimeClassName"] == "gvisor" and "procMount" not in tools["securityContext"]
        assert annotation_list(pod.meta, BASELINE) == [] and "tools" in annotation_list(pod.meta, RESTRICTED)
        assert namespace["pod-security.kubernetes.io/enforce"] == "restricted"
    else:
        assert tools["securityContext"]["procMount"] == "Unmasked"
        assert namespace["pod-security.kubernetes.io/enforce"] == "baseline"


def test_no_claim_is_mounted_by_two_pods_except_the_results_claim_each_task_sees_a_folder_of() -> None:
    claims: dict[str, list[tuple[PodTemplate, dict[str, Any]]]] = {}
    for t in templates():
        for volume in t.spec.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                claims.setdefault(volume["persistentVolumeClaim"]["claimName"], []).append((t, volume))
    pvcs = {o["metadata"]["name"]: o for o in objects() if o["kind"] == "PersistentVolumeClaim"}
    shared = {name for name, users in claims.items() if sum(t.pods for t, _ in users) > 1}
    assert shared == {"ai-coding-batch-results"}
    assert pvcs["ai-coding-batch-results"]["spec"]["accessModes"] == ["ReadWriteMany"]
    for t, volume in claims["ai-coding-batch-results"]:
        for _, c in containers(t.spec):
            for m in c.get("volumeMounts", []):
                if m["name"] != volume["name"]:
                    continue
                writer = not (m.get("readOnly") or volume["persistentVolumeClaim"].get("readOnly"))
                assert not writer or "$(TASK_INDEX)" in m.get("subPathExpr", ""), (t.owner, c["name"])
                assert m["mountPath"] != "/workspace"
    for t in templates():  # per-pod claims (StatefulSet templates) belong to exactly one pod each
        assert not t.claim_templates or t.pods == 1, t.owner


def test_workspace_state_never_runs_in_more_than_one_replica() -> None:
    kinds = {o["kind"] for o in objects()}
    assert "Deployment" not in kinds and "ReplicaSet" not in kinds
    for t in templates():
        mounts_workspace = any(m["mountPath"] == "/workspace" for _, c in containers(t.spec)
                               for m in c.get("volumeMounts", []))
        if t.owner.startswith("StatefulSet/"):
            assert t.pods == 1, t.owner
        if mounts_workspace and not t.owner.startswith("Job/"):
            assert t.pods == 1, t.owner
        if t.owner.startswith("Job/"):  # each task pod has its own workspace, gone with it
            workspace = next(v for v in t.spec["volumes"] if v["name"] == "workspace")
            assert "emptyDir" in workspace


def test_every_container_is_non_root_with_requests_and_limits() -> None:
    for t, _, c in all_containers():
        pod_sc, sc = t.spec.get("securityContext", {}), c.get("securityContext", {})
        assert sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True, (t.owner, c["name"])
        assert int(sc.get("runAsUser", pod_sc.get("runAsUser", 0))) >= 1000, (t.owner, c["name"])
        for kind in ("requests", "limits"):
            assert set(c["resources"][kind]) >= {"cpu", "memory", "ephemeral-storage"}, (t.owner, c["name"], kind)


def _restricted_violations(t: PodTemplate, c: dict[str, Any]) -> list[str]:
    """The `restricted` profile's container-level checks (pod-security-admission's), by name."""
    pod_sc, sc = t.spec.get("securityContext", {}), c.get("securityContext", {})
    found = []
    if sc.get("allowPrivilegeEscalation") is not False:
        found.append("allowPrivilegeEscalation")
    caps = sc.get("capabilities", {})
    if "ALL" not in caps.get("drop", []) or set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
        found.append("capabilities")
    seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        found.append("seccompProfile")
    if sc.get("procMount", "Default") != "Default":
        found.append("procMount")
    if sc.get("privileged") or (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
        found.append("privileged/appArmor")
    if c.get("ports") and any("hostPort" in p for p in c["ports"]):
        found.append("hostPort")
    return found


def test_each_container_meets_the_pod_security_level_its_pod_claims_for_it() -> None:
    for t in templates():
        restricted, baseline = annotation_list(t.meta, RESTRICTED), annotation_list(t.meta, BASELINE)
        names = [c["name"] for _, c in containers(t.spec)]
        assert sorted(restricted + baseline) == sorted(names), t.owner  # every container is accounted for
        assert not any(t.spec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC")), t.owner
        for volume in t.spec.get("volumes", []):
            assert set(volume) - {"name"} <= RESTRICTED_VOLUMES, (t.owner, volume)
        for _, c in containers(t.spec):
            violations = _restricted_violations(t, c)
            if c["name"] in restricted:
                assert violations == [], (t.owner, c["name"])
            else:  # baseline: only the unmasked /proc, which baseline allows in a user-namespaced pod
                assert violations == ["procMount"] and t.spec["hostUsers"] is False, (t.owner, c["name"])


def test_the_namespace_enforces_the_weakest_level_a_pod_claims() -> None:
    labels = find(objects(), "Namespace", "ai-coding")["metadata"]["labels"]
    weakest = "baseline" if any(annotation_list(t.meta, BASELINE) for t in templates()) else "restricted"
    assert labels["pod-security.kubernetes.io/enforce"] == weakest
    # baseline allows procMount: Unmasked for user-namespaced pods from policy version 1.35 on
    assert labels["pod-security.kubernetes.io/enforce-version"] == "v1.35"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"


def test_the_tools_container_has_no_token_no_secret_and_no_network() -> None:
    config_maps = {o["metadata"]["name"]: o for o in objects() if o["kind"] == "ConfigMap"}
    seen = 0
    for t in templates():
        for _, c in containers(t.spec):
            if c["name"] != "tools":
                continue
            seen += 1
            assert t.spec["automountServiceAccountToken"] is False, t.owner
            volumes = {v["name"]: v for v in t.spec["volumes"]}
            for m in c["volumeMounts"]:
                volume = volumes.get(m["name"], {})  # absent: a StatefulSet's claim template
                assert "secret" not in volume and "projected" not in volume, (t.owner, m)
                assert "serviceaccount" not in m["mountPath"]
            assert "envFrom" not in c and all("value" in e for e in c["env"]), (t.owner, "env from a source")
            # Its only port is the plaintext health port; it listens on a Unix socket otherwise.
            [port] = c["ports"]
            assert port["name"].startswith("health") and str(port["containerPort"]) == env_value(c, "AI_CODING_HEALTH_PORT")
            assert env_value(c, "AI_CODING_TOOLS_ENDPOINT") is None
            config_volume = next(volumes[m["name"]] for m in c["volumeMounts"] if m["mountPath"] == "/etc/ai-coding/config")
            config = yaml.safe_load(config_maps[config_volume["configMap"]["name"]]["data"]["config.yaml"])
            sandbox = config["tools"]["sandbox"]
            assert (sandbox["mode"], sandbox["network"], sandbox["self_test"]) == ("bwrap", False, True)
    assert seen == 2  # the workspace pod and the batch pod


def test_every_service_container_probes_grpc_health_on_the_port_it_serves_it_on() -> None:
    for t, role, c in all_containers():
        if c.get("args", [""])[0] != "serve":
            continue
        port = env_value(c, "AI_CODING_HEALTH_PORT")
        assert port is not None and int(port) in {p["containerPort"] for p in c["ports"]}, (t.owner, c["name"])
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert c[probe]["grpc"]["port"] == int(port), (t.owner, c["name"], probe)
        assert role == "main" or role == "sidecar"
    ports = [int(env_value(c, "AI_CODING_HEALTH_PORT") or 0) for t, _, c in all_containers()
             if t.owner.startswith("StatefulSet/") and c.get("args", [""])[0] == "serve"]
    assert len(set(ports)) == len(ports) == 4  # one network namespace: one port each


def test_the_loop_is_the_one_tcp_listener_and_it_has_tls_and_the_token() -> None:
    sts = find(objects(), "StatefulSet", "ai-coding-workspace")
    pod = sts["spec"]["template"]["spec"]
    listeners = [c["name"] for _, c in containers(pod) if any(
        (env_value(c, f"AI_CODING_{s}_ENDPOINT") or "").startswith("tcp://")
        for s in ("LOOP", "TOOLS", "MEMORY", "MCP_GATEWAY"))]
    assert listeners == ["loop"]
    loop = next(c for _, c in containers(pod) if c["name"] == "loop")
    token = next(e for e in loop["env"] if e["name"] == "AI_CODING_TOKEN")
    assert token["valueFrom"]["secretKeyRef"]["name"] == "ai-coding-token"
    assert any(m["mountPath"] == "/etc/ai-coding/tls" for m in loop["volumeMounts"])
    job = find(objects(), "Job", "ai-coding-batch")["spec"]["template"]["spec"]
    assert not [c for _, c in containers(job) if any(str(e.get("value", "")).startswith("tcp://") for e in c.get("env", []))]


def test_secrets_reach_the_config_only_through_variables() -> None:
    for name in ("ai-coding-config", "ai-coding-batch-config"):
        text = find(objects(), "ConfigMap", name)["data"]["config.yaml"]
        config = yaml.safe_load(text)
        assert config["models"]["main"]["api_key"] == "${OPENAI_API_KEY}"
        assert "token" not in config["endpoints"]["auth"] and "token_file" not in config["endpoints"]["auth"]


def test_the_batch_config_is_the_workspace_config_without_harvest() -> None:
    common = yaml.safe_load(find(objects(), "ConfigMap", "ai-coding-config")["data"]["config.yaml"])
    batch = yaml.safe_load(find(objects(), "ConfigMap", "ai-coding-batch-config")["data"]["config.yaml"])
    assert batch.pop("loop") == {"harvest": False}
    assert batch == common


def test_the_job_runs_one_pod_per_task_of_its_tasks_file() -> None:
    from clients.cli.batch.tasks import parse_tasks

    job = find(objects(), "Job", "ai-coding-batch")["spec"]
    tasks = parse_tasks(yaml.safe_load(find(objects(), "ConfigMap", "ai-coding-tasks")["data"]["tasks.yaml"]), "tasks")
    assert job["completionMode"] == "Indexed" and job["completions"] == len(tasks)
    assert job["template"]["spec"]["restartPolicy"] == "Never" and job["backoffLimitPerIndex"] >= 1


def test_every_image_is_registry_name_version_of_this_release() -> None:
    images = {c["image"] for _, _, c in all_containers()}
    assert len(images) == 1
    [image] = images
    match = IMAGE.match(image)
    assert match and match.group(3) == __version__, image


def test_the_grace_period_covers_the_loops_drain_and_the_sidecars() -> None:
    for t in templates():
        if any(c.get("args", [""])[0] == "serve" for _, c in containers(t.spec)):
            assert t.spec["terminationGracePeriodSeconds"] >= 30, t.owner


def test_the_readme_names_each_container_at_the_level_its_pod_claims() -> None:
    text = (DEPLOY / "README.md").read_text()
    for t in templates():
        for level, key in (("restricted", RESTRICTED), ("baseline", BASELINE)):
            for name in annotation_list(t.meta, key):
                assert re.search(rf"`{re.escape(name)}`[^\n]*\b{level}\b", text), (t.owner, name, level)


def test_the_node_profiles_the_tools_container_names_ship_and_leave_bubblewrap_its_calls() -> None:
    import json

    node = K8S / "node"
    named = set()
    for t in templates():
        for _, c in containers(t.spec):
            sc = c.get("securityContext", {})
            for key in ("seccompProfile", "appArmorProfile"):
                if sc.get(key, {}).get("type") == "Localhost":
                    named.add((key, sc[key]["localhostProfile"]))
    assert named == {("seccompProfile", "ai-coding/bwrap.json"), ("appArmorProfile", "ai-coding-bwrap")}
    readme = (node / "README.md").read_text()
    assert "/var/lib/kubelet/seccomp/ai-coding/bwrap.json" in readme and "/etc/apparmor.d/ai-coding-bwrap" in readme
    profile = json.loads((node / "bwrap.json").read_text())
    denied = {name for rule in profile["syscalls"] if rule["action"] != "SCMP_ACT_ALLOW" for name in rule["names"]}
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    assert not denied & {"unshare", "clone", "clone3", "mount", "umount2", "pivot_root", "setns", "sethostname"}
    assert {"kexec_load", "init_module", "bpf", "open_by_handle_at", "userfaultfd"} <= denied
    apparmor = (node / "ai-coding-bwrap.apparmor").read_text()
    assert "profile ai-coding-bwrap " in apparmor and re.search(r"^\s+userns,$", apparmor, re.M)
    assert re.search(r"^\s+mount,$", apparmor, re.M)
