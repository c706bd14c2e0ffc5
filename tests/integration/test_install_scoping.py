"""The install as the real kube-apiserver enforces it (envtest only: RBAC and Pod Security
admission are the server's): with `controller.watchNamespace` the controller may touch workloads
in that namespace only, yet works there with the ServiceAccount's own token; its namespace
enforces, audits and warns about the restricted Pod Security Standard at a pinned version."""

from __future__ import annotations

import itertools
import ssl
from collections.abc import AsyncIterator
from typing import Any

import pytest

from jobset_infra.cluster.install import apply_all, local_install
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.controller.runtime.auth import ClusterAccess
from jobset_infra.controller.runtime.kube import ForbiddenError, KubeClient
from jobset_infra.controller.runtime.manager import start_controller
from jobset_infra.controller.runtime.resources import Resource
from jobset_infra.manifests import controller as controller_manifests
from jobset_infra.manifests.jobset_system import system_objects
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import NAMESPACES, Cluster, manifest
from tests.waiting import until

pytestmark = pytest.mark.envtest
ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
REVIEWS = Resource("authorization.k8s.io", "v1", "subjectaccessreviews",
                   "SubjectAccessReview", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod")
_installs = itertools.count()


@pytest.fixture
async def api(envtest_server: RunningCluster) -> AsyncIterator[KubeClient]:
    async with KubeClient(envtest_server.access(), enforce_permissions=False) as client:
        yield client


async def may(api: KubeClient, user: str, verb: str, resource: str, *, group: str = "",
              namespace: str | None = None) -> bool:
    attributes: dict[str, Any] = {"verb": verb, "resource": resource, "group": group}
    if namespace is not None:
        attributes["namespace"] = namespace
    review = await api.create(REVIEWS, {"apiVersion": "authorization.k8s.io/v1",
                                        "kind": "SubjectAccessReview",
                                        "spec": {"user": user, "resourceAttributes": attributes}})
    return bool(review["status"].get("allowed"))


async def test_a_scoped_install_grants_workloads_in_its_namespace_only(
    api: KubeClient, envtest_server: RunningCluster
) -> None:
    n = next(_installs)
    watched, other, home = f"scoped-{n}", f"elsewhere-{n}", f"scoped-system-{n}"
    for name in (watched, other):
        await api.create(NAMESPACES, {"metadata": {"name": name}})
    install = local_install(namespace=home, name=f"scoped-{n}",
                            config={"controller": {"watchNamespace": watched}})
    objects = system_objects(install)
    await apply_all(api, [objects.crd, *objects.prerequisites()])
    user = f"system:serviceaccount:{home}:{install.name}"
    assert await may(api, user, "list", "jobs", group="batch", namespace=watched)
    assert await may(api, user, "create", "jobs", group="batch", namespace=watched)
    assert not await may(api, user, "list", "jobs", group="batch", namespace=other), (
        "not outside it")
    assert not await may(api, user, "list", "jobs", group="batch"), "not cluster-wide"
    assert not await may(api, user, "update", "jobsets/status", group="jobset.x-k8s.io",
                         namespace=other)
    assert await may(api, user, "list", "nodes"), "Nodes are cluster-scoped: the ClusterRole"
    assert await may(api, user, "create", "tokenreviews", group="authentication.k8s.io")
    # ... and the controller works with just that, as its ServiceAccount.
    issued = await api.request("POST", ACCOUNTS.path(home, install.name, "token"), body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    token = issued["status"]["token"]

    async def bearer(_: bool) -> str | None:
        return f"Bearer {token}"

    # The CA only: with the admin's client certificate the server would not look at the token.
    trust = ssl.create_default_context(cafile=str(envtest_server.layout.pki.ca_cert))
    access = ClusterAccess(host=envtest_server.url, ssl_context=trust, token_source=bearer)
    config = install.config.model_copy(update={
        "metrics": install.config.metrics.model_copy(update={"bind_address": "0"}),
        "health": install.config.health.model_copy(
            update={"health_probe_bind_address": "0"})})
    ctl = await start_controller(config, access=access)
    try:
        cluster = Cluster("envtest", access, api, watched, has_gc=False)
        body = manifest(make_jobset("js").replicated_job("w", replicas=2))
        body["metadata"]["namespace"] = watched
        await cluster.api.create(Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
                                 body, watched)

        async def created() -> bool:
            return len(await cluster.jobs()) == 2

        await until(created, "the JobSet's Jobs in the watched namespace", timeout=30)
        assert ctl.readiness().ok
    finally:
        await ctl.stop()


async def test_the_controller_namespace_enforces_audits_and_warns_restricted_pinned(
    api: KubeClient,
) -> None:
    n = next(_installs)
    install = local_install(namespace=f"pss-{n}", name=f"pss-{n}")
    objects = system_objects(install)
    labels = objects.namespace["metadata"]["labels"]
    version = controller_manifests.PSS_VERSION
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
        assert labels[f"pod-security.kubernetes.io/{mode}-version"] == version
    await apply_all(api, [objects.namespace, objects.service_account])
    pod_spec = objects.deployment["spec"]["template"]["spec"]
    ours = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ours"}, "spec": pod_spec}
    dry = {"dryRun": "All"}
    await api.request("POST", PODS.path(install.namespace), body=ours, params=dry)
    privileged = {**ours, "metadata": {"name": "privileged"}, "spec": {
        **pod_spec, "containers": [{**pod_spec["containers"][0],
                                    "securityContext": {"privileged": True}}]}}
    with pytest.raises(ForbiddenError, match=f'violates PodSecurity "restricted:{version}"'):
        await api.request("POST", PODS.path(install.namespace), body=privileged, params=dry)
