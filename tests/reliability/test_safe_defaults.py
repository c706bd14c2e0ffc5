"""Safe defaults of what `pulumi up` would really apply, checked on the whole stack program (the
v5e-dev GKE stack under Pulumi's mocks), not on one builder in isolation:

- the cluster kubeconfig (a credential: CA data plus the exec plugin) is a Pulumi secret wherever
  it is an input, and never shows in what `jobset-infra plan` prints or writes;
- no registry password or other credential is passed in plain text to any resource (images are
  pulled and pushed through Workload Identity / the node service account, so there is none);
- the controller Deployment as rendered by the program meets the "restricted" Pod Security
  Standard, and its namespace enforces that standard;
- every GKE node the program creates (system pool and TPU slice pools) runs as a dedicated service
  account with GKE's minimal scopes behind the GKE metadata server, on a cluster with Workload
  Identity, shielded nodes, no legacy ABAC and no client certificate (pinned as literals here, so
  widening the shared constants fails this test too).

Unit-level pins live beside their modules: GKE secure defaults in
tests/components/test_gke_cluster.py, the restricted rules in tests/manifests/test_pod_security.py,
the Deployment builder in tests/manifests/test_controller.py, RBAC against the calls the
controller makes in tests/integration/test_rbac_calls.py.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest

from jobset_infra.cli import main
from jobset_infra.manifests.pod_security import restricted_violations
from jobset_infra.plan.command import stack_config
from jobset_infra.plan.offline import MOCK_CA_B64, OfflineRun, run_offline
from jobset_infra.plan.preview import kubernetes_objects, redact_secrets, render_tree

ROOT = Path(__file__).parents[2]
STACK = "v5e-dev"
# What only a kubeconfig (or another credential) contains.
CREDENTIAL_MARKERS = (MOCK_CA_B64, "certificate-authority-data", "gke-gcloud-auth-plugin")
SECRET_WORDS = ("password", "token", "secret", "credential", "privatekey", "private_key")
SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"
# GKE's "gke-default" node scopes. `cloud-platform` here would hand every pod on the node the
# node service account's whole IAM reach; workloads get Google APIs through Workload Identity.
MINIMAL_NODE_SCOPES = frozenset(
    f"https://www.googleapis.com/auth/{scope}"
    for scope in (
        "devstorage.read_only",
        "logging.write",
        "monitoring",
        "service.management.readonly",
        "servicecontrol",
        "trace.append",
    )
)
GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"

pytestmark = pytest.mark.timeout(120)


@functools.cache
def offline_run() -> OfflineRun:
    config = stack_config(ROOT / "stacks" / f"Pulumi.{STACK}.yaml")
    return run_offline(ROOT / "stacks" / "__main__.py", stack=STACK, config=config)


def leaks(text: str) -> list[str]:
    return [marker for marker in CREDENTIAL_MARKERS if marker in text]


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and SECRET_SIG_KEY in value


def test_the_kubeconfig_is_a_secret_wherever_it_is_an_input() -> None:
    run = offline_run()
    holders = [r for r in run.registrations if leaks(json.dumps(r.inputs, default=str))]
    assert holders, "the GKE stack passes a kubeconfig to its Kubernetes provider"
    for reg in holders:
        assert not leaks(json.dumps(redact_secrets(reg.inputs), default=str)), (
            f"{reg.type} {reg.name} holds kubeconfig material outside a Pulumi secret"
        )
    providers = [r for r in holders if r.type == "pulumi:providers:kubernetes"]
    assert providers and all(is_secret(p.inputs["kubeconfig"]) for p in providers)


def _credential_fields(value: Any, path: str = "") -> list[str]:
    found: list[str] = []
    if is_secret(value):
        return found
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if any(word in str(key).lower() for word in SECRET_WORDS) and isinstance(item, str):
                found.append(where)
            found += _credential_fields(item, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _credential_fields(item, f"{path}[{i}]")
    return found


def test_no_resource_gets_a_credential_in_plain_text() -> None:
    plain = {
        f"{reg.type} {reg.name}": fields
        for reg in offline_run().registrations
        if (fields := _credential_fields(dict(reg.inputs)))
    }
    assert plain == {}


def test_the_rendered_controller_pod_meets_restricted_in_a_restricted_namespace() -> None:
    objects = kubernetes_objects(offline_run().registrations)
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    assert restricted_violations(deployment["spec"]["template"]) == []
    namespace = deployment["metadata"]["namespace"]
    [ns] = [o for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == namespace]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_what_plan_shows_holds_no_credential() -> None:
    run = offline_run()
    shown = render_tree(run.registrations, "jobset-infra", STACK)
    shown += json.dumps(kubernetes_objects(run.registrations), default=str)
    shown += "\n".join(message for _, message in run.logs)
    assert leaks(shown) == []


def test_the_plan_command_prints_and_writes_no_credential(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", "--stack", STACK, "--project-dir", str(ROOT), "--out", str(tmp_path)])
    assert code == 0, err.getvalue()
    written = "".join(p.read_text() for p in sorted(tmp_path.rglob("*.yaml")))
    assert written, "plan wrote the objects"
    assert leaks(out.getvalue() + err.getvalue() + written) == []


def test_the_stack_exports_the_kubeconfig_only_as_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    exported: dict[str, Any] = {}
    monkeypatch.setattr(pulumi, "export", exported.__setitem__)

    def program() -> None:
        runpy.run_path(str(ROOT / "stacks" / "__main__.py"), run_name="__main__")
        # A probe resource takes the outputs as inputs, so the recorder shows which are secret.
        pulumi.CustomResource("audit:index:Exports", "exports", dict(exported))

    config = stack_config(ROOT / "stacks" / f"Pulumi.{STACK}.yaml")
    run = run_offline(program, stack=STACK, config=config)
    [probe] = run.of_type("audit:index:Exports")
    outputs = dict(probe.inputs)
    assert is_secret(outputs["kubeconfig"]), "the kubeconfig stack output is a Pulumi secret"
    shown = {key: value for key, value in outputs.items() if not is_secret(value)}
    assert leaks(json.dumps(shown, default=str)) == []


def test_every_gke_node_is_least_privilege_on_a_hardened_cluster() -> None:
    run = offline_run()
    [cluster] = run.of_type(GKE_CLUSTER)
    pools = run.of_type(GKE_NODE_POOL)
    assert len(pools) >= 2, "the system pool and the TPU slice pools"
    settings = dict(cluster.inputs)
    assert settings["workloadIdentityConfig"]["workloadPool"].endswith(".svc.id.goog")
    assert settings["enableShieldedNodes"] is True
    assert settings["enableLegacyAbac"] is False
    assert settings["masterAuth"] == {"clientCertificateConfig": {"issueClientCertificate": False}}
    for node in [cluster, *pools]:
        config = node.inputs["nodeConfig"]
        where = f"{node.type} {node.name}"
        # Omitted, GKE would run the node as the Compute Engine default account (project Editor).
        assert config.get("serviceAccount") is not None, f"{where}: no dedicated service account"
        assert set(config["oauthScopes"]) == MINIMAL_NODE_SCOPES, where
        assert config["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}, where
