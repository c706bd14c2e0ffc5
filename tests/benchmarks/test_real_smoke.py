"""Smoke test of `python -m benchmarks --real`: its smallest scenario, for both controllers.

The real tier: a fresh local cluster per controller (etcd, kube-apiserver, controller-manager,
scheduler, kwok Nodes), our `jobset-controller` and upstream's `jobset-manager` with its
webhooks on loopback, exactly as the benchmark runs them. A multislice JobSet of 2 v5e 4x4
slices on 2 pools; the assertions are counts (Jobs created, Pods Running, Pods carrying
inter-pod affinity, writes), never times. Without the tools (`make tools`, `go` for upstream's
module folder) it is skipped; under JOBSET_REQUIRE_REAL=1 it fails instead.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import pytest

from benchmarks.real.peers import Ours, Peer, Upstream
from benchmarks.real.scenarios import Run, placement
from benchmarks.real.testbed import DEFAULT, start_testbed
from benchmarks.real.upstream import UpstreamError
from benchmarks.real.workloads import HOSTS_PER_SLICE, tpu_nodes
from jobset_infra.cluster.binaries import MissingBinaryError
from tests.realcluster import REQUIRE_ENV, tools_or_skip

pytestmark = [pytest.mark.real, pytest.mark.timeout(240)]
SLICES = 2


def peer_or_skip(make: type[Ours] | type[Upstream]) -> Peer:
    tools_or_skip()
    try:
        return make()
    except (MissingBinaryError, UpstreamError) as err:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {err}")
        pytest.skip(f"real benchmark tier: {err} (make tools builds jobset-manager)")


def smallest(peer: Peer) -> Run:
    async def one() -> Run:
        run = Run("placement", peer.name, SLICES, DEFAULT.label, 0)
        folder = Path(tempfile.mkdtemp(prefix=f"jobset-real-smoke-{peer.name}-"))
        async with start_testbed(peer, tpu_nodes(SLICES), DEFAULT, folder) as bed:
            return await placement(bed, run, quiet_window=0.5, recover=False)

    return asyncio.run(one())


@pytest.fixture(scope="module")
def ours() -> Run:
    return smallest(peer_or_skip(Ours))


@pytest.fixture(scope="module")
def theirs() -> Run:
    return smallest(peer_or_skip(Upstream))


@pytest.mark.parametrize("who", ["ours", "theirs"])
def test_every_slice_gets_its_job_and_every_host_a_running_pod(
        who: str, request: pytest.FixtureRequest) -> None:
    run: Run = request.getfixturevalue(who)
    assert run.jobs_created == SLICES
    assert run.start is not None
    assert run.start.pods == run.pods == SLICES * HOSTS_PER_SLICE
    assert run.scheduler["scheduled"] >= SLICES * HOSTS_PER_SLICE


def test_our_pods_carry_no_affinity_and_we_write_each_job_once(ours: Run) -> None:
    assert ours.affinity_pods == 0
    assert ours.start is not None
    assert ours.start.write_kinds["create jobs"] == SLICES
    assert ours.start.write_kinds.get("create services") == 1
    assert ours.quiet_writes == 0
    assert ours.webhooks["calls"] == 0  # no admission webhook anywhere on our path


def test_upstream_puts_affinities_on_the_leaders_through_its_webhooks(theirs: Run) -> None:
    # one leader per Job (completion index 0) gets podAffinity + podAntiAffinity (#310)
    assert theirs.affinity_pods == SLICES
    assert theirs.start is not None
    assert theirs.start.write_kinds["create jobs"] == SLICES
    # the JobSet, every Pod create (rejected followers retried) went through its webhooks
    assert theirs.webhooks["calls"] >= 2 + SLICES * HOSTS_PER_SLICE
