"""Both sides of the Go-client parity check: `jobset-goclient apply` against upstream's install
(its CRD, and its manager serving its webhooks) and against ours (our CRD and defaulting
policy), each on a real kube-apiserver of envtest's shape (etcd and kube-apiserver only).

`jobset-goclient` (tools/jobset-parity) is our Go client built from upstream's API module at the
pin of tools/jobset; see tests/api/test_go_clients.py for what it sends and does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Final

from benchmarks.real import upstream as upstream_files
from benchmarks.real.peers import MUTATING, VALIDATING, Limits, Upstream
from jobset_infra.api.defaulting_policy import defaulting_policy, defaulting_policy_binding
from jobset_infra.cluster import install
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.controller.runtime.kube import ApiError, KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import JOBSETS, Resource
from jobset_infra.manifests.crd import jobset_crd
from tests.integration.conftest import NAMESPACES
from tests.waiting import until

CRD_NAME: Final = "jobsets.jobset.x-k8s.io"
UNNAMED: Final = "a failure-policy rule without a name"
ACCOUNTS: Final = Resource("", "v1", "serviceaccounts", "ServiceAccount")
_UNNAMED_PROBE: Final = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
    "metadata": {"name": "defaulting-probe", "namespace": "default"},
    "spec": {
        "failurePolicy": {"rules": [{"name": "", "action": "FailJobSet"}]},
        "replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}}],
    },
}


def run_goclient(binary: Path, kubeconfig: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    out = subprocess.run([str(binary), *args], capture_output=True, text=True, env=env,
                         timeout=180, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"jobset-goclient {' '.join(args)}: {out.stderr.strip()}")
    answer: dict[str, Any] = json.loads(out.stdout)
    return answer


def fixtures_digest(binary: Path) -> str:
    """SHA-256 of every shape as the Go client builds it (a recording is of these shapes)."""
    shapes = run_goclient(binary, Path("/dev/null"), "fixtures")
    return hashlib.sha256(json.dumps(shapes, sort_keys=True).encode()).hexdigest()


async def _namespace(api: KubeClient, name: str) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": name}})


async def upstream_side(cluster: RunningCluster, api: KubeClient, folder: Path,
                        binary: Path) -> dict[str, Any]:
    """Every shape against upstream's CRD and webhooks; they are removed again afterwards."""
    peer = Upstream()
    await peer.install(api)
    # The manager's readiness probe creates a Pod (dry run) in `default`; without a
    # controller-manager nobody creates that namespace's ServiceAccount, which Pods need.
    await api.create(ACCOUNTS, {"metadata": {"name": "default", "namespace": "default"}},
                     "default")
    manager = await peer.start(cluster, api, Limits(50, 100), folder)
    try:
        await _namespace(api, "upstream")
        return await asyncio.to_thread(run_goclient, binary, cluster.kubeconfig, "apply",
                                       "-namespace", "upstream")
    finally:
        manager.stop()
        for document in upstream_files.webhook_configurations(peer.folder, 1, b""):
            res = MUTATING if document["kind"] == MUTATING.kind else VALIDATING
            # no garbage collector runs here: a foreground delete would never finish
            await api.delete(res, document["metadata"]["name"], propagation="Background")
        await _remove_crd(api)


async def _remove_crd(api: KubeClient) -> None:
    crds = install.KINDS["CustomResourceDefinition"]
    await api.delete(crds, CRD_NAME, propagation="Background")

    async def gone() -> bool:
        try:
            await api.get(crds, CRD_NAME)
        except NotFoundError:
            return True
        return False

    await until(gone, "upstream's CRD deleted", timeout=60)


async def our_side(
    cluster: RunningCluster, api: KubeClient, binary: Path
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The shapes against our CRD with our defaulting policy, and the unnamed rule against our
    CRD alone (a cluster before Kubernetes 1.36, without MutatingAdmissionPolicy)."""
    await install.apply_all(api, [jobset_crd()])
    await _namespace(api, "ours-without-policy")

    async def served() -> bool:  # the CRD is Established a moment before its kind is served
        try:
            await api.list(JOBSETS, "ours-without-policy")
        except ApiError:
            return False
        return True

    await until(served, "our CRD served", timeout=60)
    alone = await asyncio.to_thread(run_goclient, binary, cluster.kubeconfig, "apply",
                                    "-namespace", "ours-without-policy", "-only", UNNAMED)
    await install.apply_all(api, [defaulting_policy(), defaulting_policy_binding()])

    async def defaulting() -> bool:  # the policy is loaded once a dry run comes back named
        try:
            created = await api.request("POST", JOBSETS.path("default"), body=_UNNAMED_PROBE,
                                        params={"dryRun": "All"})
        except ApiError:
            return False
        return bool(created["spec"]["failurePolicy"]["rules"][0]["name"])

    await until(defaulting, "our defaulting policy in effect", timeout=60)
    await _namespace(api, "ours")
    full = await asyncio.to_thread(run_goclient, binary, cluster.kubeconfig, "apply",
                                   "-namespace", "ours")
    return full, alone


def comparable(answers: dict[str, Any]) -> dict[str, Any]:
    """What is compared of an answer: what was refused, and what was stored (not what was sent,
    which names its namespace)."""
    keys = ("createError", "stored", "copyError", "copyStored", "suspendError")
    return {shape: {k: a.get(k) for k in keys} for shape, a in answers.items()}
