"""The pod a TPU job runs on each VM of a slice: what users get wrong by hand, derived.

All chips of the VM (`google.com/tpu` request and limit, as a quantity string), the TPU ports,
the slice's nodeSelector and toleration, `restartPolicy: Never`, and hostNetwork with
ClusterFirstWithHostNet DNS as XPK and JobSet's TPU examples run. Pure; `manifests.workload`
builds the replicated job around it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Protocol

from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.slice import TpuSlice

__all__ = ["HOST_NETWORK_DNS_POLICY", "TPU_PORTS", "TpuPodJob", "tpu_pod_spec"]

HOST_NETWORK_DNS_POLICY = "ClusterFirstWithHostNet"
# Named container ports of TPU pods (names are at most 15 characters).
TPU_PORTS: tuple[tuple[str, int], ...] = (
    ("tpu-runtime", tpu.TPU_RUNTIME_PORT),
    ("megascale", tpu.TPU_MEGASCALE_PORT),
    ("tpu-metrics", tpu.TPU_METRICS_PORT),
)



class _Target(Protocol):
    @property
    def slice(self) -> TpuSlice: ...

    @property
    def node_selector(self) -> Mapping[str, str]: ...

    @property
    def tolerations(self) -> tuple[Mapping[str, str], ...]: ...


class TpuPodJob(Protocol):
    """What the pod needs of a TPU job (`manifests.workload.TpuJob`)."""

    @property
    def container(self) -> Mapping[str, Any]: ...

    @property
    def target(self) -> _Target: ...

    @property
    def host_network(self) -> bool: ...

    @property
    def service_account_name(self) -> str | None: ...

    @property
    def termination_grace_period_seconds(self) -> int | None: ...


def tpu_pod_spec(job: TpuPodJob) -> dict[str, Any]:
    """The pod of one TPU VM: the container with its chips and ports, on the slice's nodes."""
    pod: dict[str, Any] = {
        # Never: a failed pod fails its Job at once and the JobSet restarts every slice together.
        "restartPolicy": "Never",
        "nodeSelector": dict(job.target.node_selector),
        "tolerations": [dict(t) for t in job.target.tolerations],
        "containers": [_tpu_container(job)],
    }
    if job.host_network:
        pod["hostNetwork"] = True
        # Without it a hostNetwork pod resolves with the node's DNS and cannot find its peers.
        pod["dnsPolicy"] = HOST_NETWORK_DNS_POLICY
    if job.service_account_name is not None:
        pod["serviceAccountName"] = job.service_account_name
    if job.termination_grace_period_seconds is not None:
        pod["terminationGracePeriodSeconds"] = job.termination_grace_period_seconds
    return pod


def _tpu_container(job: TpuPodJob) -> dict[str, Any]:
    container = copy.deepcopy(dict(job.container))
    # A quantity as the API server and Kueue write it back ("4", not 4): a number would differ
    # from the live object at every diff, and a JobSet's spec change means a replacement.
    chips = str(job.target.slice.tpu_request)
    resources = container.setdefault("resources", {})
    for kind in ("requests", "limits"):
        resources.setdefault(kind, {})[tpu.TPU_RESOURCE] = chips
    ports = container.setdefault("ports", [])
    taken_numbers = {p.get("containerPort") for p in ports}
    taken_names = {p.get("name") for p in ports}
    for name, number in TPU_PORTS:
        if number not in taken_numbers and name not in taken_names:
            ports.append({"name": name, "containerPort": number, "protocol": "TCP"})
    return container
