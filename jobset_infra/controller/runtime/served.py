"""Whether the API server really takes a custom kind: the one home of that check.

A new CRD's kind is served in steps, each a moment after the one before: the CRD is
Established, then a list of the kind is answered, then a create is. A create in between is
refused with 503 "Resource kind ... not found. There can be a delay between when
CustomResourceDefinitions are created and when they are available": the API server's
MutatingAdmissionPolicy plugin (our JobSet defaulting is one) looks the kind up in its own
type registry, which polls the server's OpenAPI every few seconds and so learns of a new CRD
seconds after the list works (seen in CI, in the real-engine tests and in the Outputs program,
where a JobSet created right after JobSetSystem was refused).

So the check lists the kind, then makes a dry-run create of an empty object, which the server
refuses as invalid once the kind is served, and with 404/503 before. Users of it: the local
cluster's install and the integration tier (after applying the CRD), and the controller's
readiness (`manager`), which makes JobSetSystem's `ready` wait for it through the Deployment.
"""

from __future__ import annotations

from typing import Final

from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.kube_errors import (
    ApiError,
    NotFoundError,
    ServerError,
    TooManyRequestsError,
)
from jobset_infra.controller.runtime.resources import Resource

PROBE_NAME: Final = "jobset-infra-served-check"
PROBE_NAMESPACE: Final = "default"
"""A namespace every cluster has: a dry-run create in a missing one would answer 404."""


async def kind_served(api: KubeClient, res: Resource, namespace: str = PROBE_NAMESPACE) -> bool:
    """Whether `res`'s kind takes a list and a create (dry run: nothing is stored), in
    `namespace` when it is namespaced (one that exists, and where the caller may create)."""
    probe = {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": PROBE_NAME}}
    where = namespace if res.namespaced else None
    try:
        await api.request("GET", res.path(where), params={"limit": "1"})
        await api.create(res, probe, where, dry_run=True)
    except (ServerError, NotFoundError, TooManyRequestsError):
        return False
    except ApiError as err:
        # Refused on its merits (invalid): the kind is served. Forbidden, the probe cannot
        # tell; a caller without `create` is not held up by a check it cannot make. Code 0:
        # the server did not answer at all, which says nothing of the kind.
        return err.code != 0
    return True
