"""Record what upstream's install answers to every shape of `jobset-goclient` (upstream.json).

Not a test: run it after changing the shapes (tools/jobset-parity) or the pin of
sigs.k8s.io/jobset (tools/jobset/go.mod), with the tools built (`python3 tools/build.py`):

    python -m tests.api.go_clients.record

It starts a real kube-apiserver (envtest's shape), installs upstream's CRD, runs upstream's
manager with its webhooks registered, runs `jobset-goclient apply` against it and writes the
answers, the module version and the shapes' digest beside this file. tests/api/test_go_clients.py
compares ours against it on every run, and fails when the pin or the shapes changed since.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from benchmarks.real.upstream import pinned_version
from jobset_infra.cluster.binaries import find
from jobset_infra.cluster.local import RunningCluster
from tests.api.go_clients.sides import comparable, fixtures_digest, upstream_side
from tests.realcluster import real_cluster

OUT = Path(__file__).with_name("upstream.json")


def record() -> dict[str, object]:
    binary = find("jobset-goclient")
    folder = Path(tempfile.mkdtemp(prefix="jobset-goclient-record-"))

    async def run(cluster: RunningCluster) -> dict[str, object]:
        async with cluster.client() as api:
            answers = await upstream_side(cluster, api, folder, binary)
        return {"jobset": pinned_version(), "fixtures": fixtures_digest(binary),
                "answers": comparable(answers)}

    with real_cluster(apiserver_only=True) as cluster:
        return asyncio.run(run(cluster))


if __name__ == "__main__":
    OUT.write_text(json.dumps(record(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
