"""Safe defaults of what `pulumi up` would really apply, checked on the whole stack program (the
v5e-dev GKE stack under Pulumi's mocks), not on one builder in isolation:

- the cluster kubeconfig (a credential: CA data plus the exec plugin) is a Pulumi secret wherever
  it is an input, and never shows in what `jobset-infra plan` prints or writes;
- no registry password or other credential is passed in plain text to any resource (images are
  pulled and pushed through Workload Identity / the node service account, so there is none);
- the controller Deployment as rendered by the program meets the "restricted" Pod Security
  Standard, and its namespace enforces that standard.

Unit-level pins live beside their modules: GKE secure defaults in
tests/components/test_gke_cluster.py, the restricted rules in tests/manifests/test_pod_security.py,
the Deployment builder in tests/manifests/test_controller.py, declared RBAC in
tests/controller/runtime/test_rbac_matches_runtime.py.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.cli import main
from jobset_infra.components.offline import MOCK_CA_B64, OfflineRun, run_offline
from jobset_infra.components.preview import kubernetes_objects, redact_secrets, render_tree
from jobset_infra.manifests.pod_security import restricted_violations
from jobset_infra.plan_command import stack_config

ROOT = Path(__file__).parents[2]
STACK = "v5e-dev"
# What only a kubeconfig (or another credential) contains.
CREDENTIAL_MARKERS = (MOCK_CA_B64, "certificate-authority-data", "gke-gcloud-auth-plugin")
SECRET_WORDS = ("password", "token", "secret", "credential", "privatekey", "private_key")
SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"

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
