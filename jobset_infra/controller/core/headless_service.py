"""The headless Service that gives a JobSet's pods DNS hostnames (upstream
`createHeadlessSvcIfNecessary`, jobset_controller.go l.788-833).

One per JobSet, named after the subdomain (else the JobSet), clusterIP None, selecting the
JobSet's pods, publishNotReadyAddresses true unless set false. It is created when missing and
never updated or adopted, exactly as upstream.
"""

from __future__ import annotations

from jobset_infra.api import constants as c
from jobset_infra.api.models import JobSet
from jobset_infra.controller.core.identity import (
    dns_hostnames_enabled,
    owner_reference,
    subdomain,
)
from jobset_infra.controller.core.types import Manifest

__all__ = ["headless_service", "service_to_create"]


def headless_service(js: JobSet) -> Manifest:
    """Return the headless Service manifest for `js`."""
    network = js.spec.network
    publish = network.publish_not_ready_addresses if network is not None else None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": subdomain(js),
            "namespace": js.namespace,
            "ownerReferences": [owner_reference(js)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {c.JOBSET_NAME_KEY: js.name},
            "publishNotReadyAddresses": publish is not False,
        },
    }


def service_to_create(js: JobSet, service_exists: bool) -> Manifest | None:
    """Return the Service to create, or None when DNS is off or it already exists."""
    if not dns_hostnames_enabled(js) or service_exists:
        return None
    return headless_service(js)
