"""Real tier: upstream's feature gates (and ours ahead of upstream) on the real control plane.

One module-scoped full local cluster (etcd, kube-apiserver 1.37, kube-controller-manager with
the real Job controller and garbage collector, kube-scheduler, kwok Nodes), our CRD rendered for
the gates and our defaulting policy, and our controller in the test's event loop with every gate
below turned on. Each case works in a namespace of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio
import yaml

from jobset_infra.api import constants as k
from jobset_infra.api.defaulting_policy import defaulting_policy, defaulting_policy_binding
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.cluster import install
from jobset_infra.cluster.binaries import MissingBinaryError, find
from jobset_infra.cluster.kwok_stages import EXIT_CODE_ANNOTATION
from jobset_infra.cluster.layout import token_kubeconfig
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.controller.runtime import auth
from jobset_infra.controller.runtime.kube import JSON_PATCH, ApiError, KubeClient
from jobset_infra.controller.runtime.manager import RunningController, start_controller
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, SERVICES, Resource
from jobset_infra.manifests.crd import jobset_crd
from jobset_infra.manifests.in_place_restart import AGENT_ACCOUNT, agent_objects
from jobset_infra.testing.jobsets import make_jobset
from tests.e2e.in_place_agents import PODS, Agents
from tests.integration.conftest import NAMESPACES, fast_config
from tests.realcluster import REQUIRE_ENV, real_cluster
from tests.waiting import until

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.timeout(240)]
T = TypeVar("T")
GATES = (Feature.IN_PLACE_RESTART, Feature.ELASTIC_JOBSET, Feature.MUTABLE_POD_RESOURCES,
         Feature.EXECUTION_ATTEMPTS, Feature.CREATE_CHILDREN_ON_FIRST_RESUME)
GATED = FeatureGates.of({g.value: True for g in GATES})
POLICY_KINDS = {
    "ValidatingAdmissionPolicy": Resource("admissionregistration.k8s.io", "v1",
                                          "validatingadmissionpolicies",
                                          "ValidatingAdmissionPolicy", namespaced=False),
    "ValidatingAdmissionPolicyBinding": Resource(
        "admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding", namespaced=False),
    "ServiceAccount": Resource("", "v1", "serviceaccounts", "ServiceAccount"),
    "Role": Resource("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    "RoleBinding": Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
}
_namespaces = itertools.count()


def tool(name: str) -> Path:
    try:
        return find(name)
    except MissingBinaryError as err:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {err}")
        pytest.skip(f"real tier: {err}")


@dataclass
class Gated:
    cluster: RunningCluster
    api: KubeClient
    controller: RunningController

    async def namespace(self) -> str:
        name = f"gated-{next(_namespaces)}"
        await self.api.create(NAMESPACES, {"metadata": {"name": name}})
        return name

    async def jobset(self, namespace: str, name: str) -> dict[str, Any]:
        return await self.api.get(JOBSETS, name, namespace)

    async def pods(self, namespace: str, jobset: str) -> list[dict[str, Any]]:
        selector = f"{k.JOBSET_NAME_KEY}={jobset}"
        items = (await self.api.list(PODS, namespace, label_selector=selector))["items"]
        return sorted(items, key=lambda p: p["metadata"]["name"])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gated() -> AsyncIterator[Gated]:
    # the CRD as an install with these gates renders it (ElasticJobSet's scaling rules)
    with real_cluster("cpu:4", crds=(jobset_crd(GATED),)) as cluster:
        async with cluster.client() as api:
            await install.apply_all(api, [defaulting_policy(), defaulting_policy_binding()])
            config = fast_config(featureGates=GATED.as_dict())
            controller = await start_controller(config, access=cluster.access())
            try:
                await controller.wait_leader(30)
                yield Gated(cluster, api, controller)
            finally:
                await asyncio.wait_for(controller.stop(), 30)


# --- InPlaceRestart (KEP-467), with upstream's agent ------------------------------------------


def in_place_jobset(name: str, pods: int, max_restarts: int) -> dict[str, Any]:
    """Upstream's main-container-mode example, shaped for the agents here."""
    builder = (
        make_jobset(name)
        .replicated_job("workers", replicas=1, parallelism=pods, completions=pods)
        .failure_policy(max_restarts=max_restarts, restart_strategy="InPlaceRestart")
        .job_spec("workers", backoffLimit=k.MAX_INT32, podReplacementPolicy="Failed")
        .pod_spec("workers", serviceAccountName=AGENT_ACCOUNT, restartPolicy="Never",
                  terminationGracePeriodSeconds=0,
                  containers=[{"name": "in-place-restart-agent", "image": "in-place-agent:v1",
                               "restartPolicy": "Never", "restartPolicyRules": [{
                                   "action": "Restart",
                                   "exitCodes": {"operator": "NotIn", "values": [0]}}]}])
    )
    return builder.obj()


@contextlib.asynccontextmanager
async def agents_of(gated: Gated, namespace: str, jobset: str) -> AsyncIterator[Agents]:
    folder = Path(tempfile.mkdtemp(prefix="jobset-agents-"))
    agents = Agents(gated.cluster, gated.api, binary=tool("in-place-restart-agent"),
                    folder=folder, namespace=namespace, jobset=jobset, account=AGENT_ACCOUNT)
    stopping = asyncio.Event()
    task = asyncio.create_task(agents.run(stopping))
    try:
        yield agents
    finally:
        stopping.set()
        await task


async def _agent_identity(gated: Gated, namespace: str) -> None:
    for manifest in agent_objects(namespace):
        res = POLICY_KINDS[manifest["kind"]]
        await gated.api.create(res, manifest, manifest["metadata"].get("namespace"))


def _status(js: dict[str, Any]) -> dict[str, Any]:
    return js.get("status") or {}


async def test_a_failed_worker_restarts_in_place_with_upstreams_agent_and_no_pod_is_recreated(
    gated: Gated,
) -> None:
    ns = await gated.namespace()
    await _agent_identity(gated, ns)
    await gated.api.create(JOBSETS, {**in_place_jobset("ipr", pods=2, max_restarts=3),
                                     "metadata": {"name": "ipr", "namespace": ns}}, ns)
    async with agents_of(gated, ns, "ipr") as agents:
        # every Pod annotated at attempt 0: the controller lifts the barrier, workers start
        async def synced(attempt: int) -> bool:
            js = await gated.jobset(ns, "ipr")
            return _status(js).get("currentInPlaceRestartAttempt") == attempt

        await until(lambda: synced(0), "currentInPlaceRestartAttempt 0", timeout=60)
        pods = await gated.pods(ns, "ipr")
        names, uids = [p["metadata"]["name"] for p in pods], {p["metadata"]["uid"] for p in pods}
        jobs = {j["metadata"]["uid"] for j in (await gated.api.list(JOBS, ns))["items"]}
        await until(lambda: _async(all(agents.worker_starts(n) == 1 for n in names)),
                    "both workers started behind the barrier", timeout=60)
        # one worker fails: its Pod restarts in place, the other is restarted in place to join
        agents.fail_worker(names[0])
        await until(lambda: synced(1), "currentInPlaceRestartAttempt 1", timeout=90)
        await until(lambda: _async(all(agents.worker_starts(n) == 2 for n in names)),
                    "both workers started again at attempt 1", timeout=60)
        js = await gated.jobset(ns, "ipr")
        pods = await gated.pods(ns, "ipr")
        assert {p["metadata"]["uid"] for p in pods} == uids, "no Pod was recreated"
        assert {j["metadata"]["uid"] for j in (await gated.api.list(JOBS, ns))["items"]} == jobs
        assert [p["metadata"]["annotations"][k.IN_PLACE_RESTART_ATTEMPT_KEY] for p in pods] == [
            "1", "1"]
        assert [p["status"]["containerStatuses"][0]["restartCount"] for p in pods] == [1, 1]
        status = _status(js)
        assert (status["previousInPlaceRestartAttempt"], status["restarts"]) == (0, 0)
        assert not [c for c in status.get("conditions", []) if c["status"] == "True" and
                    c["type"] in (k.CONDITION_FAILED, k.CONDITION_RESTARTING)]
        # the workers finish: the Pods succeed, the Jobs complete, so does the JobSet
        agents.finish_workers()

        async def completed() -> bool:
            return _status(await gated.jobset(ns, "ipr")).get("terminalState") == "Completed"

        await until(completed, "the JobSet Completed", timeout=90)


async def _async(value: T) -> T:
    return value


async def test_in_place_restarts_past_max_restarts_fail_the_jobset_as_upstream(
    gated: Gated,
) -> None:
    ns = await gated.namespace()
    await _agent_identity(gated, ns)
    await gated.api.create(JOBSETS, {**in_place_jobset("ipr", pods=2, max_restarts=1),
                                     "metadata": {"name": "ipr", "namespace": ns}}, ns)
    async with agents_of(gated, ns, "ipr") as agents:
        names: list[str] = []
        for attempt in (1, 2):  # the second round takes a container past maxRestarts (1)
            async def started(n: int = attempt) -> bool:
                names[:] = [p["metadata"]["name"] for p in await gated.pods(ns, "ipr")]
                return len(names) == 2 and all(agents.worker_starts(x) == n for x in names)

            await until(started, f"both workers started {attempt} time(s)", timeout=90)
            agents.fail_worker(names[0])

        async def failed() -> dict[str, Any] | None:
            conditions = _status(await gated.jobset(ns, "ipr")).get("conditions") or []
            return next((c for c in conditions if c["type"] == k.CONDITION_FAILED
                         and c["status"] == "True"), None)

        condition = await until(failed, "the JobSet Failed", timeout=90)
        assert (condition["reason"], condition["message"]) == (
            k.REACHED_MAX_RESTARTS_REASON, k.REACHED_MAX_RESTARTS_MESSAGE)
        js = await gated.jobset(ns, "ipr")
        assert (_status(js)["terminalState"], _status(js)["restarts"]) == ("Failed", 0)


async def test_the_agents_account_may_change_only_the_attempt_annotation(gated: Gated) -> None:
    ns = await gated.namespace()
    await _agent_identity(gated, ns)
    await gated.api.create(JOBSETS, {**in_place_jobset("ipr", pods=1, max_restarts=1),
                                     "metadata": {"name": "ipr", "namespace": ns}}, ns)
    pod = (await until(lambda: gated.pods(ns, "ipr"), "the Pod", timeout=60))[0]
    agents = Agents(gated.cluster, gated.api, binary=Path("/bin/false"),
                    folder=Path(tempfile.mkdtemp()), namespace=ns, jobset="ipr",
                    account=AGENT_ACCOUNT)
    token = await agents._token(pod)  # the token the agent of this Pod gets
    user = f"system:serviceaccount:{ns}:{AGENT_ACCOUNT}"
    kubeconfig = agents.folder / "agent.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(token_kubeconfig(gated.cluster.layout, user, token)))
    async with KubeClient(await auth.load(str(kubeconfig)), enforce_permissions=False) as agent:
        name = pod["metadata"]["name"]
        allowed = {"metadata": {"annotations": {k.IN_PLACE_RESTART_ATTEMPT_KEY: "0"}}}
        await agent.patch(PODS, name, allowed, namespace=ns)

        tries = itertools.count()

        async def refusal() -> ApiError | None:
            # A new value each try: an edit the policy let through before it took effect would
            # make the same edit again a no-op, which the policy rightly admits (this test once
            # waited 60 s on exactly that).
            edit = {"metadata": {"labels": {"x": f"try-{next(tries)}"}}}
            try:
                await agent.patch(PODS, name, edit, namespace=ns)
            except ApiError as err:
                return err
            return None

        # An admission policy takes effect a moment after it is created: wait for the refusal
        # (bounded), then its words.
        refused = await until(refusal,
                              "the agent's label edit refused by the admission policy", timeout=60)
        assert refused.code == 422 and k.IN_PLACE_RESTART_ATTEMPT_KEY in refused.message


# --- helpers of the other gates' cases ---------------------------------------------------------


async def _patch(gated: Gated, ns: str, name: str, *ops: dict[str, Any]) -> None:
    await gated.api.patch(JOBSETS, name, list(ops), namespace=ns, content_type=JSON_PATCH)


def _suspend(value: bool) -> dict[str, Any]:
    return {"op": "add", "path": "/spec/suspend", "value": value}


async def _jobs(gated: Gated, ns: str) -> list[dict[str, Any]]:
    items = (await gated.api.list(JOBS, ns))["items"]
    live = [j for j in items if not j["metadata"].get("deletionTimestamp")]
    return sorted(live, key=lambda j: j["metadata"]["name"])


def _condition(js: dict[str, Any], type_: str) -> str | None:
    for cond in _status(js).get("conditions") or ():
        if cond["type"] == type_:
            return str(cond["status"])
    return None


def _annotation(obj: dict[str, Any], key: str) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(key)


def _template_annotation(job: dict[str, Any], key: str) -> str | None:
    meta = job["spec"]["template"].get("metadata") or {}
    return (meta.get("annotations") or {}).get(key)


# --- ElasticJobSet (KEP-463) -----------------------------------------------------------------


async def test_elastic_scaling_of_a_running_jobset_reaches_its_jobs_and_bad_scaling_is_refused(
    gated: Gated,
) -> None:
    ns = await gated.namespace()
    js = make_jobset("elastic").replicated_job("w", replicas=1, parallelism=2, completions=2)
    await gated.api.create(JOBSETS, {**js.obj(), "metadata": {"name": "elastic",
                                                              "namespace": ns}}, ns)
    await until(lambda: _jobs(gated, ns), "the Job", timeout=60)
    size = "/spec/replicatedJobs/0/template/spec/"
    # upstream's webhook refuses these with the gate on; so does the CRD rendered with it
    for bad, message in (((3, 4), k.ELASTIC_EQUAL_MESSAGE), ((0, 0), k.ELASTIC_MIN_MESSAGE)):
        with pytest.raises(ApiError) as refused:
            await _patch(gated, ns, "elastic", {"op": "replace", "path": size + "parallelism",
                                                "value": bad[0]},
                         {"op": "replace", "path": size + "completions", "value": bad[1]})
        assert message in refused.value.message
    with pytest.raises(ApiError) as refused:
        await _patch(gated, ns, "elastic", {"op": "add", "path": size + "backoffLimit",
                                            "value": 3})
    assert "field is immutable" in refused.value.message
    # P == C: admitted while the JobSet runs, and the controller scales the live Job
    await _patch(gated, ns, "elastic", {"op": "replace", "path": size + "parallelism",
                                        "value": 4},
                 {"op": "replace", "path": size + "completions", "value": 4})

    async def scaled() -> bool:
        jobs = await _jobs(gated, ns)
        return bool(jobs) and (jobs[0]["spec"]["parallelism"], jobs[0]["spec"]["completions"]
                               ) == (4, 4)

    await until(scaled, "the Job scaled to 4/4", timeout=60)
    pods = await until(lambda: _pods_at_least(gated, ns, "elastic", 4), "4 Pods", timeout=60)
    assert len(pods) == 4


async def _pods_at_least(gated: Gated, ns: str, name: str, n: int) -> list[dict[str, Any]]:
    pods = await gated.pods(ns, name)
    return pods if len(pods) >= n else []


# --- CreateChildrenOnFirstResume (upstream #535) and ExecutionAttemptsTracking (KEP-1282) ------


async def test_no_children_before_the_first_resume_and_every_execution_is_counted(
    gated: Gated,
) -> None:
    ns = await gated.namespace()
    js = (make_jobset("runs").replicated_job("w", replicas=2, parallelism=1, completions=1)
          .job_spec("w", backoffLimit=0).failure_policy(max_restarts=3).suspend())
    await gated.api.create(JOBSETS, {**js.obj(), "metadata": {"name": "runs",
                                                              "namespace": ns}}, ns)

    async def reconciled_suspended() -> dict[str, Any] | None:
        found = await gated.jobset(ns, "runs")
        return found if _condition(found, k.CONDITION_SUSPENDED) == "True" else None

    # the pass that wrote Suspended=True would have created the Jobs and the Service first
    found = await until(reconciled_suspended, "Suspended=True", timeout=60)
    assert await _jobs(gated, ns) == []
    assert (await gated.api.list(SERVICES, ns))["items"] == []
    assert "executionAttempts" not in _status(found), "never ran: unset"

    async def attempts(n: int) -> bool:
        jobs = await _jobs(gated, ns)
        status = _status(await gated.jobset(ns, "runs"))
        return (status.get("executionAttempts") == n and len(jobs) == 2 and all(
            not j["spec"].get("suspend") and _annotation(j, k.EXECUTION_ATTEMPT_KEY) == str(n)
            and _template_annotation(j, k.EXECUTION_ATTEMPT_KEY) == str(n) for j in jobs))

    await _patch(gated, ns, "runs", _suspend(False))  # the first resume: the first run, 0
    await until(lambda: attempts(0),
                "the first run: executionAttempts 0, Jobs annotated 0", timeout=60)
    assert [s["metadata"]["name"] for s in (await gated.api.list(SERVICES, ns))["items"]] == [
        "runs"]
    await until(lambda: _pods_at_least(gated, ns, "runs", 2), "the first run's Pods", timeout=60)
    # a Kueue eviction and readmission: one more execution, the resumed Jobs carry it
    await _patch(gated, ns, "runs", _suspend(True))

    async def suspended() -> bool:
        jobs = await _jobs(gated, ns)
        return len(jobs) == 2 and all(j["spec"].get("suspend") for j in jobs)

    await until(suspended, "the Jobs suspended", timeout=60)
    await _patch(gated, ns, "runs", _suspend(False))
    await until(lambda: attempts(1),
                "the resume: executionAttempts 1, Jobs annotated 1", timeout=60)

    async def annotated_pods(n: int) -> bool:
        pods = await gated.pods(ns, "runs")
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        return len(live) == 2 and all(
            _annotation(p, k.EXECUTION_ATTEMPT_KEY) == str(n) for p in live)

    await until(lambda: annotated_pods(1), "the resumed Pods annotated 1", timeout=60)
    # a failure restarts the JobSet (RestartJobSet): one more execution
    pod = (await gated.pods(ns, "runs"))[0]
    await gated.api.patch(PODS, pod["metadata"]["name"], {"metadata": {"annotations": {
        EXIT_CODE_ANNOTATION: "1"}}}, namespace=ns)
    await until(lambda: attempts(2),
                "the restart: executionAttempts 2, new Jobs annotated 2", timeout=90)
    status = _status(await gated.jobset(ns, "runs"))
    assert status["restarts"] == 1


# --- MutablePodResourcesForSuspendedJobSets (KEP-1150) -----------------------------------------


async def test_resources_changed_while_suspended_reach_the_jobs_on_resume(gated: Gated) -> None:
    ns = await gated.namespace()
    js = (make_jobset("resize").replicated_job("w", replicas=1, parallelism=1, completions=1)
          .pod_spec("w", containers=[{"name": "main", "image": "busybox:1.36", "resources": {
              "requests": {"cpu": "100m"}}}]))
    await gated.api.create(JOBSETS, {**js.obj(), "metadata": {"name": "resize",
                                                              "namespace": ns}}, ns)
    await until(lambda: _pods_at_least(gated, ns, "resize", 1), "the Pod", timeout=60)
    await _patch(gated, ns, "resize", _suspend(True))

    async def job_suspended() -> bool:
        jobs = await _jobs(gated, ns)
        conds = (jobs[0].get("status") or {}).get("conditions") or [] if jobs else []
        return any(c["type"] == "Suspended" and c["status"] == "True" for c in conds)

    await until(job_suspended, "the Job suspended (its Suspended condition)", timeout=60)
    # what Kueue does to right-size a queued JobSet, then readmit it
    path = "/spec/replicatedJobs/0/template/spec/template/spec/containers/0/resources/requests"
    await _patch(gated, ns, "resize", {"op": "replace", "path": path, "value": {"cpu": "250m"}})
    await _patch(gated, ns, "resize", _suspend(False))

    def requests(obj: dict[str, Any]) -> dict[str, Any]:
        spec = obj["spec"]["template"]["spec"] if "template" in obj["spec"] else obj["spec"]
        return dict(spec["containers"][0].get("resources", {}).get("requests") or {})

    async def resized() -> bool:
        jobs = await _jobs(gated, ns)
        return bool(jobs) and not jobs[0]["spec"].get("suspend") and requests(jobs[0]) == {
            "cpu": "250m"}

    await until(resized, "the Job resumed with cpu 250m", timeout=90)

    async def new_pod() -> bool:
        pods = [p for p in await gated.pods(ns, "resize")
                if not p["metadata"].get("deletionTimestamp")]
        return bool(pods) and all(requests(p) == {"cpu": "250m"} for p in pods)

    await until(new_pod, "a Pod requesting cpu 250m", timeout=90)
