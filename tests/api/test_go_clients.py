"""Real tier: JobSets as upstream's Go types send them, admitted and stored as upstream stores them.

`jobset-goclient` (tools/jobset-parity, our Go client built from upstream's API module at the
pin of tools/jobset) builds every shape below with upstream's own Go types and test builders,
so its JSON carries Go's zero values exactly as Go sends them (`"name": ""` on an unnamed
failure-policy rule, `network: {}`, `suspend: false`, `ttlSecondsAfterFinished: 0`, template
metadata with a namespace, PVC templates with `status: {}`). It creates each one through
upstream's typed clientset, reads it back into upstream's Go types, copies it to a new name as
Kueue's MultiKueue adapter does (the stored spec, managedBy cleared) and suspends it as Kueue
evicts (read, set `spec.suspend`, update, again on a conflict).

Upstream's answers are recorded (go_clients/upstream.json, by go_clients/record.py: the same
client against upstream's CRD with its manager serving its webhooks, on the same kind of real
kube-apiserver); a test fails when the pin or the shapes changed since. This file runs the
client against our CRD and defaulting policy on a real kube-apiserver, and every shape must be
accepted and stored as upstream stored it, field for field as upstream's Go types read it back.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.real.upstream import pinned_version
from jobset_infra.cluster.binaries import MissingBinaryError, find
from jobset_infra.cluster.local import RunningCluster
from tests.api.go_clients.sides import UNNAMED, comparable, fixtures_digest, our_side
from tests.realcluster import REQUIRE_ENV, real_cluster

pytestmark = [pytest.mark.envtest, pytest.mark.slow, pytest.mark.timeout(300)]

RECORDED: dict[str, Any] = json.loads(
    (Path(__file__).parent / "go_clients" / "upstream.json").read_text())
# The shapes of tools/jobset-parity/cmd/jobset-goclient/fixtures.go, by id.
SHAPES = (
    "the controller suite's base JobSet",
    "a replicated job without replicas (Go omits the zero)",
    "a failure-policy rule without a name",
    "a named rule followed by an unnamed one",
    "three unnamed rules with blocking recreate",
    "an empty failure policy",
    "a success policy Any on one replicated job",
    "the InOrder startup policy",
    "dependsOn beside the AnyOrder startup policy",
    "a coordinator at job 0 pod 0 (Go omits both zeros)",
    "a coordinator at job 1 pod 2",
    "a subdomain with DNS hostnames off",
    "publishNotReadyAddresses off",
    "created suspended",
    "suspend false sent explicitly",
    "managed by MultiKueue",
    "ttlSecondsAfterFinished zero sent explicitly",
    "a volume claim policy without a retention policy",
    "a volume claim policy that retains its PVCs",
    "a NonIndexed Job template",
    "a pod template without a restart policy",
    "group names on two replicated jobs",
    "exclusive placement annotations and labels",
    "a Job template with a pod failure policy",
    "a generated name",
    "a status filled by a Go client copying a live object",
    "pod template labels and annotations",
)


def goclient() -> Path:
    try:
        return find("jobset-goclient")
    except MissingBinaryError as err:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {err}")
        pytest.skip(f"real tier: {err}")


@pytest.fixture(scope="module")
def ours() -> Iterator[dict[str, dict[str, Any]]]:
    binary = goclient()

    async def run(cluster: RunningCluster) -> dict[str, dict[str, Any]]:
        async with cluster.client() as api:
            full, alone = await our_side(cluster, api, binary)
        return {"with the policy": full, "without the policy": alone}

    with real_cluster(apiserver_only=True) as cluster:
        yield asyncio.run(run(cluster))


def test_the_recording_is_of_these_shapes_and_this_pin() -> None:
    # else: python -m tests.api.go_clients.record (with the tools built)
    assert RECORDED["jobset"] == pinned_version()
    assert RECORDED["fixtures"] == fixtures_digest(goclient())
    assert sorted(RECORDED["answers"]) == sorted(SHAPES)


@pytest.mark.parametrize("shape", SHAPES)
def test_upstream_took_its_own_fixtures_shape_and_kueues_updates(shape: str) -> None:
    theirs = RECORDED["answers"][shape]
    assert (theirs["createError"], theirs["copyError"], theirs["suspendError"]) == ("", "", "")


@pytest.mark.parametrize("shape", SHAPES)
def test_a_go_clients_jobset_is_admitted_and_stored_as_upstream_stores_it(
    ours: dict[str, dict[str, Any]], shape: str
) -> None:
    assert comparable(ours["with the policy"])[shape] == RECORDED["answers"][shape]


def test_without_the_policy_our_crd_still_takes_a_go_clients_unnamed_rule(
    ours: dict[str, dict[str, Any]],
) -> None:
    # Kubernetes before 1.36 has no MutatingAdmissionPolicy: the rule is stored unnamed, and the
    # controller names it failurePolicyRule0 when it reads it (test_failure_policy.py).
    alone = ours["without the policy"][UNNAMED]
    assert alone["createError"] == ""
    assert [r["name"] for r in alone["stored"]["failurePolicy"]["rules"]] == [""]
    stored = ours["with the policy"][UNNAMED]["stored"]
    assert [r["name"] for r in stored["failurePolicy"]["rules"]] == ["failurePolicyRule0"]
