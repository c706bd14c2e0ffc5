"""The two servers the suite plays against, set up alike: the JobSet CRD installed and served.

The real one is etcd + kube-apiserver in envtest's shape (no controllers, so no garbage
collector); the sim runs without its garbage collector to match.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from jobset_infra.sim.apiserver.server import SimThread
from tests.conformance.runner import Target, play_step
from tests.realcluster import real_cluster

CRD_FILE = Path(__file__).parents[2] / "jobset_infra/api/crd/jobset.x-k8s.io_jobsets.yaml"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def install_crd(target: Target, timeout: float = 30.0) -> None:
    """Create the JobSet CRD and wait until JobSets can be listed."""
    crd = yaml.safe_load(CRD_FILE.read_text())
    answer = play_step(target, {"method": "POST", "path": CRDS, "body": crd}, {"ns": ""})
    if answer["code"] not in (201, 409):
        raise RuntimeError(f"installing the CRD: {json.dumps(answer)[:500]}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = play_step(target, {"method": "GET",
                                    "path": "/apis/jobset.x-k8s.io/v1alpha2/jobsets"}, {"ns": ""})
        if listed["code"] == 200:
            return
        time.sleep(0.1)  # the API server serves a new CRD after its discovery controller runs
    raise RuntimeError("the JobSet CRD was not served in time")


@contextmanager
def sim_target() -> Iterator[Target]:
    with SimThread(garbage_collector=False) as sim:
        target = Target(sim.url)
        install_crd(target)
        yield target


@contextmanager
def real_target() -> Iterator[Target]:
    with real_cluster(apiserver_only=True) as cluster:
        target = Target(cluster.url, cluster.access().ssl_context)
        install_crd(target)
        yield target
