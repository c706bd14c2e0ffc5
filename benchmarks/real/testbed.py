"""One scenario run's world: a fresh real local cluster with an audit log, and one controller.

`start_testbed(peer, nodes, limits, folder)` starts the cluster (`jobset_infra.cluster.local`)
with kube-apiserver auditing the two controllers' users, installs the peer's CRD (and
webhooks), starts the controller and yields a `Testbed`; on the way out it stops both and
removes the folder (kept when the run failed, for its logs). A fresh cluster per run means no
run sees another's objects, watch history or garbage collection backlog.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import ssl
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.real import audit
from benchmarks.real.peers import ControllerProcess, Limits, Ours, Peer, Upstream
from jobset_infra.api.constants import GROUP
from jobset_infra.cluster.install import KINDS
from jobset_infra.cluster.layout import COMPONENT_BURST, COMPONENT_QPS, Tuning
from jobset_infra.cluster.local import ClusterOptions, RunningCluster, start_cluster
from jobset_infra.controller.core.job_view import parse_time
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.resources import Resource

NAMESPACES: Final = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CRDS: Final = KINDS["CustomResourceDefinition"]
# "Lifted": far above what kube-apiserver on this machine can serve (about 1-2k writes/s on two
# cores), so no token bucket is what bounds a run.
LIFTED: Final = Limits(100_000, 100_000)
DEFAULT: Final = Limits(500, 500)


@dataclass
class Testbed:
    cluster: RunningCluster
    api: KubeClient  # admin, no client limit worth the name: the benchmark's own reads
    audit: audit.AuditLog
    peer: Peer
    controller: ControllerProcess
    folder: Path
    session: aiohttp.ClientSession
    limits: Limits

    async def create_namespace(self, name: str) -> None:
        await self.api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": name}})

    async def scheduler_metrics(self) -> str:
        """kube-scheduler's /metrics text (it serves a certificate it made itself)."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.cluster.layout.ports.scheduler}/metrics"
        return await self._get(url, context)

    async def apiserver_metrics(self) -> str:
        layout = self.cluster.layout
        context = ssl.create_default_context(cafile=str(layout.pki.ca_cert))
        return await self._get(f"{layout.url}/metrics", context)

    async def _get(self, url: str, context: ssl.SSLContext) -> str:
        headers = {"Authorization": f"Bearer {self.cluster.layout.admin_token}"}
        async with self.session.get(url, ssl=context, headers=headers) as response:
            return await response.text()


def pick(text: str, wanted: Sequence[tuple[str, str, dict[str, str]]]) -> dict[str, float]:
    """For each (key, sample name, labels): the sum of the matching samples of `text`
    (a counter's samples end in _total; a histogram's _sum and _count are named as such)."""
    out = {key: 0.0 for key, _, _ in wanted}
    names = {n for _, n, _ in wanted} | {f"{n}_total" for _, n, _ in wanted}
    for line in text.splitlines():
        if not line or line.startswith("#") or line.split("{", 1)[0].split(" ", 1)[0] \
                not in names:
            continue
        for family in text_string_to_metric_families(line + "\n"):
            for sample in family.samples:
                for key, name, labels in wanted:
                    if sample.name in (name, f"{name}_total") and all(
                            sample.labels.get(k) == v for k, v in labels.items()):
                        out[key] += sample.value
    return out


def tuning(limits: Limits, audit_dir: Path) -> Tuning:
    """The cluster for a run at `limits`: with the controller's limit lifted, the Job
    controller's and scheduler's are lifted too (else they, not the JobSet controller, bound
    "all Pods Running"); at the default limit they keep `cluster up`'s 500/1000."""
    policy = audit_dir / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(audit.policy([Ours.user, Upstream.user])))
    args = audit.apiserver_args(policy, audit_dir / "audit.log")
    if limits == LIFTED:
        return Tuning(component_qps=int(LIFTED.qps), component_burst=LIFTED.burst,
                      apiserver_args=args)
    return Tuning(component_qps=COMPONENT_QPS, component_burst=COMPONENT_BURST,
                  apiserver_args=args)


async def _started(options: ClusterOptions) -> RunningCluster:
    """start_cluster in a thread; cancelled meanwhile (SIGTERM), the cluster it was starting
    is stopped once up rather than left running."""
    starting = asyncio.ensure_future(asyncio.to_thread(start_cluster, options, lambda _: None))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            cluster = await starting
            await asyncio.to_thread(cluster.stop, True)
        raise


# kube-apiserver holds every create of a custom resource for 2 s while its CRD has been
# Established for less than 2 s (apiextensions-apiserver, customresource_handler.go: "we want to
# track recently created CRDs so that in HA environments..."). A scenario's JobSet create made in
# that window would time the server's hold, not the controller: our controller starts in under
# 2 s, upstream's (webhook certificates) does not, so 7 of 18 of our scale runs once did.
CRD_CREATION_HOLD: Final = 2.0
_MARGIN: Final = 0.05  # the server's clock and ours are the same machine's


async def past_creation_hold(api: KubeClient) -> float:
    """Wait until the JobSet group's CRDs (which the peer's install waited to be Established)
    are past the server's creation hold; return how long that took."""
    established = _established_since(await api.list(CRDS))
    if established is None:
        raise RuntimeError(f"the {GROUP} CRDs are installed but not Established")
    left = max(0.0, established + CRD_CREATION_HOLD + _MARGIN - time.time())
    await asyncio.sleep(left)  # until a moment read from the server's own condition
    return left


def _established_since(listing: dict[str, Any]) -> float | None:
    """The latest Established transition (epoch seconds) of the group's CRDs; None until every
    one of them is Established."""
    stamps: list[float] = []
    for crd in listing.get("items") or []:
        if (crd.get("spec") or {}).get("group") != GROUP:
            continue
        moments = [parse_time(c.get("lastTransitionTime"))
                   for c in (crd.get("status") or {}).get("conditions") or []
                   if c.get("type") == "Established" and c.get("status") == "True"]
        moment = next((m for m in moments if m is not None), None)
        if moment is None:
            return None
        stamps.append(moment.timestamp())
    return max(stamps) if stamps else None


@contextlib.asynccontextmanager
async def start_testbed(peer: Peer, nodes: str, limits: Limits, folder: Path, *,
                  profile: Path | None = None) -> AsyncIterator[Testbed]:
    folder.mkdir(parents=True, exist_ok=True)
    audit_dir = folder / "audit"
    audit_dir.mkdir(exist_ok=True)
    options = ClusterOptions(nodes=nodes, folder=folder / "cluster", name=folder.name,
                             tuning=tuning(limits, audit_dir), start_timeout=180.0)
    cluster = await _started(options)
    failed = True
    controller: ControllerProcess | None = None
    try:
        async with cluster.client(qps=LIFTED.qps, burst=LIFTED.burst) as api, \
                aiohttp.ClientSession() as session:
            await peer.install(api)
            await past_creation_hold(api)
            controller = await peer.start(cluster, api, limits, folder, profile)
            yield Testbed(cluster, api, audit.AuditLog(audit_dir / "audit.log"), peer,
                          controller, folder, session, limits)
        failed = False
    finally:
        if controller is not None:
            controller.stop()
        await asyncio.to_thread(cluster.stop, True)
        if not failed:
            shutil.rmtree(folder, ignore_errors=True)
