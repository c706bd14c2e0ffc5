"""The real local control plane for the test tiers that run on it (envtest shape and full).

The binaries come from `make tools` (or KUBEBUILDER_ASSETS / PATH). Without them a real-tier
test is skipped with the command to run; with JOBSET_REQUIRE_REAL=1 (CI) it fails instead, so
a CI run can never pass by skipping the real server.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.cluster.binaries import MissingBinaryError, Tools, find_tools
from jobset_infra.cluster.deploy import SYSTEM_IMAGES
from jobset_infra.cluster.local import ClusterOptions, RunningCluster, start_cluster
from jobset_infra.tpu.node_pools import PoolSpec

REQUIRE_ENV = "JOBSET_REQUIRE_REAL"
NODE_IMAGES = (*SYSTEM_IMAGES, "workload")
"""The images every real node of the suite starts with: the system Pods' (controller, Kueue) and
the workloads'. One set, so the suite imports one template containerd root (cluster/nodeimages)
instead of one per set: an import takes 25-45 s of a fixture, hard-linking a node's root from it
under 2 s (2026-12-07)."""


def tools_or_skip(apiserver_only: bool = False) -> Tools:
    try:
        return find_tools(apiserver_only=apiserver_only)
    except MissingBinaryError as err:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {err}")
        pytest.skip(f"real-cluster tier: {err}")


def image_tools_or_skip() -> None:
    """What a daemonless image build needs: root (extraction and a chroot compile) and Debian's
    mmdebstrap (.ci/run installs it)."""
    missing = ("image builds need root" if os.geteuid() != 0 else
               "mmdebstrap not found: apt-get install -y mmdebstrap"
               if shutil.which("mmdebstrap") is None else None)
    if missing is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {missing}")
    pytest.skip(f"image tier: {missing}")


@contextmanager
def real_cluster(nodes: str = "cpu:3", *, apiserver_only: bool = False,
                 auto_complete_seconds: float | None = None,
                 extra_pools: tuple[PoolSpec, ...] = (),
                 crds: tuple[Mapping[str, Any], ...] = (),
                 system_node: bool = False,
                 images: tuple[str, ...] = NODE_IMAGES) -> Iterator[RunningCluster]:
    """A cluster in a temporary folder for the duration of the block; logs kept on failure.
    `crds` are served before the controllers start (ClusterOptions.crds); `system_node` adds
    one real node for the system Pods, `images` imported (root and the node tools)."""
    tools = tools_or_skip(apiserver_only)
    if system_node:
        from tests.realnodes import node_tools_or_skip  # it imports this module

        node_tools_or_skip()
    folder = Path(tempfile.mkdtemp(prefix="jobset-real-"))
    options = ClusterOptions(nodes=nodes, folder=folder / "cluster", name=folder.name,
                             auto_complete_seconds=auto_complete_seconds,
                             apiserver_only=apiserver_only, extra_pools=extra_pools,
                             crds=crds, system_node=system_node,
                             images=images if system_node else ())
    cluster = start_cluster(options, progress=lambda _line: None, tools=tools)
    failed = True
    try:
        yield cluster
        failed = False
    finally:
        cluster.stop(keep_files=failed)
        if not failed:
            shutil.rmtree(folder, ignore_errors=True)
