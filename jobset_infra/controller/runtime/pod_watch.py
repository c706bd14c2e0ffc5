"""The Pod watch of in-place restart (KEP-467), only with the InPlaceRestart gate on.

Upstream adds a Pod watch and a `podsIndexByJobSet` index (`<namespace>/<jobset-name>`) when the
gate is on, and wakes a Pod's JobSet on every Pod event. So does this: Pods carrying the
jobset-name label are listed and watched (other Pods are never seen), cached as the core's slim
`PodView` (a few fields each), indexed by JobSet, and a Pod event queues its JobSet after the
child-event batch period. The cache is optional: without it (no permission, an API server
refusing the watch) the rest of the controller runs and in-place restart waits.
"""

from __future__ import annotations

from collections.abc import Callable

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core.pod_view import PodView, pod_view_from_manifest
from jobset_infra.controller.runtime.informer import Informer
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.ratelimit import Clock
from jobset_infra.controller.runtime.resources import PODS
from jobset_infra.controller.runtime.workqueue import WorkQueue

__all__ = ["jobset_pods", "pod_handler", "pod_informer"]


def _jobset_key(pod: PodView) -> str | None:
    return f"{pod.namespace}/{pod.jobset}" if pod.jobset else None


def pod_informer(
    client: KubeClient, namespace: str | None, clock: Clock, gates: FeatureGates
) -> Informer[PodView] | None:
    """Pods with the jobset-name label, indexed by `<namespace>/<jobset-name>`; None with the
    InPlaceRestart gate off (no Pod is listed or watched then)."""
    if not gates.enabled(Feature.IN_PLACE_RESTART):
        return None
    return Informer(
        client,
        PODS,
        pod_view_from_manifest,
        namespace=namespace,
        indexers={c.POD_JOBSET_INDEX: lambda p: (key,) if (key := _jobset_key(p)) else ()},
        label_selector=c.JOBSET_NAME_KEY,
        required=False,
        degrades="in-place restart cannot see Pods: its attempts stay where they are",
        clock=clock,
    )


def pod_handler(
    queue: WorkQueue, batch_period: float
) -> Callable[[str, PodView | None, PodView | None], None]:
    """The watch handler: a Pod changed, so its JobSet is reconciled after the batch period."""

    def handle(kind: str, old: PodView | None, new: PodView | None) -> None:
        if kind == "update" and old == new:
            return  # nothing in-place restart reads changed
        pod = new if new is not None else old
        key = _jobset_key(pod) if pod is not None else None
        if key is not None:
            queue.add_batched(key, batch_period)

    return handle


def jobset_pods(pods: Informer[PodView] | None, key: str) -> tuple[PodView, ...] | None:
    """The JobSet's Pods from the cache, or None when Pods are not watched or not synced."""
    if pods is None or not pods.usable:
        return None
    return tuple(pods.by_index(c.POD_JOBSET_INDEX, key))
