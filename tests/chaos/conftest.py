"""Fixtures of the chaos tier: one real control plane for the whole tier (package scope: both
files run on one xdist worker, tests/schedule.py, so the cluster starts once), our system
installed without its ClusterRoleBinding until a test (or `running`) applies it, the controller
fleet, and the invariant recorder. Each test module marks itself `real` too (the real-cluster
files run first under xdist, and skip or fail without the binaries as the real tier does)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from tests.chaos.harness import Plane, chaos_config, chaos_install
from tests.chaos.invariants import Recorder
from tests.realcluster import real_cluster
from tests.waiting import until

NODES = "cpu:3"


@pytest_asyncio.fixture(scope="package", loop_scope="package")
async def plane() -> AsyncIterator[Plane]:
    """The cluster, our CRD and RBAC without the ClusterRoleBinding, no controller yet."""
    install = chaos_install()
    from jobset_infra.manifests.crd import jobset_crd
    from jobset_infra.manifests.jobset_system import system_objects

    with real_cluster(NODES, crds=(jobset_crd(),)) as cluster:
        async with cluster.client() as api:
            world = Plane(cluster, api, install, system_objects(install))
            await world.install_system(without_binding=True)
            try:
                yield world
            finally:
                if world.fleet is not None:
                    await world.fleet.stop()


@pytest_asyncio.fixture(scope="package", loop_scope="package")
async def recorder(plane: Plane) -> AsyncIterator[Recorder]:
    watcher = Recorder(plane.api)
    await watcher.start()
    try:
        yield watcher
    finally:
        await watcher.stop()
    assert not watcher.violations(), "\n".join(watcher.violations())


@pytest_asyncio.fixture(loop_scope="package")
async def running(plane: Plane, recorder: Recorder) -> Plane:
    """The system complete (binding applied) and the fleet running with a leader."""
    await plane.apply(plane.objects.cluster_role_binding)
    if plane.fleet is None:
        await plane.start_fleet(chaos_config(plane.install))

    await until(plane.leader, "a leader", timeout=120)
    return plane
