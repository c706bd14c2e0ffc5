"""The Pod watch of in-place restart (KEP-467), only with the InPlaceRestart gate on.

Upstream adds a Pod watch and a `podsIndexByJobSet` index (`<namespace>/<jobset-name>`) when the
gate is on, and wakes a Pod's JobSet on every Pod event. So does this: Pods carrying the
jobset-name label are listed and watched (other Pods are never seen), cached as the core's slim
`PodView` (a few fields each), indexed by JobSet, and a Pod event queues its JobSet after the
child-event batch period. The cache is optional: without it (no permission, an API server
refusing the watch) the rest of the controller runs and in-place restart waits.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core.pod_view import PodView, pod_view_from_manifest
from jobset_infra.controller.core.stranded_jobs import stranded_candidates
from jobset_infra.controller.core.types import ChildJob, CoreConfig, Manifest, Observed
from jobset_infra.controller.runtime.informer import Informer
from jobset_infra.controller.runtime.kube import ApiError, KubeClient
from jobset_infra.controller.runtime.ratelimit import Clock
from jobset_infra.controller.runtime.resources import PODS
from jobset_infra.controller.runtime.workqueue import WorkQueue

__all__ = ["JobPods", "jobset_pods", "pod_handler", "pod_informer"]

# The label the Job controller puts on every Pod of a Job: the Job's UID.
_JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"


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
            queue.add_batched(key, batch_period, None)  # spaced as its Jobs' events say

    return handle


def jobset_pods(pods: Informer[PodView] | None, key: str) -> tuple[PodView, ...] | None:
    """The JobSet's Pods from the cache, or None when Pods are not watched or not synced."""
    if pods is None or not pods.usable:
        return None
    return tuple(pods.by_index(c.POD_JOBSET_INDEX, key))


log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class JobPods:
    """Without the Pod cache: the Pods of the Jobs that may be stranded on a lost pool, looked
    up when a pass needs them (`stranded_jobs`: a Job moves only if none of its Pods has started
    to a Node, which its status cannot tell). Rare: such Jobs have a pool that is NotReady,
    cordoned or gone and no pod ready, so most passes look up nothing."""

    client: KubeClient
    config: CoreConfig

    async def add_to(self, observed: Observed[Manifest]) -> Observed[Manifest]:
        """Return `observed` with those Pods (unchanged when there are none to look up)."""
        jobs = stranded_candidates(observed.jobs, observed.placement, self.config)
        if observed.pods is not None or not jobs:
            return observed
        pods = await self._pods(jobs)
        return observed if pods is None else dataclasses.replace(observed, pods=pods)

    async def _pods(self, jobs: Sequence[ChildJob]) -> tuple[PodView, ...] | None:
        uids = ",".join(sorted(job.uid for job in jobs))
        try:
            found = await self.client.list(PODS, namespace=jobs[0].namespace,
                                           label_selector=f"{_JOB_UID_LABEL} in ({uids})")
        except ApiError as err:  # unknown: nothing moves this pass
            log.warning("cannot list the Pods of Jobs on a lost pool: %s", err)
            return None
        return tuple(pod_view_from_manifest(pod) for pod in found["items"])
