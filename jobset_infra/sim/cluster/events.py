"""The Warning Events the simulated cluster's components record, as client-go's event recorder
writes them (core/v1, one per occurrence): kube-scheduler's FailedScheduling on a Pod, the Job
controller's FailedCreate on a Job, so that `kubectl describe` shows why something waits."""

from __future__ import annotations

import contextlib
from typing import Any, Final

from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store

JsonObj = dict[str, Any]
EVENTS: Final = GVR("", "v1", "events")


def warn(store: Store, about: JsonObj, reason: str, message: str, *, component: str,
         action: str | None = None) -> None:
    """Record a Warning Event `reason` about the object `about` (its kind and apiVersion)."""
    meta, now = about["metadata"], store.now()
    namespace = meta.get("namespace", "")
    event: JsonObj = {
        "metadata": {"name": f"{meta['name']}.{store.rng.getrandbits(64):016x}",
                     "namespace": namespace},
        "involvedObject": {"kind": about.get("kind", ""), "apiVersion": about.get("apiVersion", ""),
                           "name": meta["name"], "namespace": namespace,
                           "uid": meta.get("uid", "")},
        "reason": reason, "message": message, "type": "Warning",
        "source": {"component": component}, "count": 1,
        "firstTimestamp": now, "lastTimestamp": now, "reportingComponent": component,
    }
    if action is not None:
        event["action"] = action
    with contextlib.suppress(StatusError):  # a namespace being deleted takes no events
        store.create(EVENTS, event, namespace)
