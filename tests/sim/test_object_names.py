"""The sim refuses object names a real API server refuses, with its 422 wording."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.api.names import (
    DNS1035_LABEL_MESSAGE,
    DNS1123_LABEL_MESSAGE,
    DNS1123_SUBDOMAIN_MESSAGE,
)
from jobset_infra.sim.apiserver.errors import InvalidError
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store
from tests.sim.kube_objects import CONFIGMAPS, CRDS, JOBS, NAMESPACES, WIDGETS, widget_crd

SERVICES = GVR("", "v1", "services")


def _obj(kind: str, api_version: str, **meta: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": dict(meta)}


@pytest.mark.parametrize(("gvr", "kind", "api_version", "meta", "want"), [
    pytest.param(JOBS, "Job", "batch/v1", {"name": "Bad_Name"},
                 'Job.batch "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
                 + DNS1123_SUBDOMAIN_MESSAGE, id="a Job named with capitals and _ is refused"),
    pytest.param(CONFIGMAPS, "ConfigMap", "v1", {"name": "a" * 254},
                 "must be no more than 253 characters",
                 id="a name longer than a subdomain is refused"),
    pytest.param(NAMESPACES, "Namespace", "v1", {"name": "team.a"}, DNS1123_LABEL_MESSAGE,
                 id="a Namespace name must be a label, so a dot is refused"),
    pytest.param(SERVICES, "Service", "v1", {"name": "1svc"}, DNS1035_LABEL_MESSAGE,
                 id="a Service name must start with a letter"),
    pytest.param(WIDGETS, "Widget", "example.com/v1", {"name": "Big"},
                 'metadata.name: Invalid value: "Big": ' + DNS1123_SUBDOMAIN_MESSAGE,
                 id="a custom resource name must be a subdomain"),
    pytest.param(JOBS, "Job", "batch/v1", {"generateName": "Run_"},
                 'metadata.generateName: Invalid value: "Run_": ' + DNS1123_SUBDOMAIN_MESSAGE,
                 id="an invalid generateName is refused"),
])
def test_invalid_names_are_422_in_the_api_servers_words(
    gvr: GVR, kind: str, api_version: str, meta: dict[str, str], want: str
) -> None:
    store = Store()
    store.create(CRDS, widget_crd())
    with pytest.raises(InvalidError) as err:
        store.create(gvr, _obj(kind, api_version, **meta), None if gvr == NAMESPACES else "default")
    assert err.value.code == 422
    assert want in err.value.status["message"]
    assert not [o for o in store.list(gvr).items if o["metadata"].get("name") == meta.get("name")]


@pytest.mark.parametrize(("gvr", "kind", "api_version", "meta"), [
    pytest.param(CONFIGMAPS, "ConfigMap", "v1", {"name": "kube-root.ca.crt"},
                 id="a dotted ConfigMap name is a valid subdomain"),
    pytest.param(CONFIGMAPS, "ConfigMap", "v1", {"generateName": "run-"},
                 id="a generateName ending in a dash is fine"),
    pytest.param(SERVICES, "Service", "v1", {"name": "svc-1"}, id="a DNS-1035 Service name"),
])
def test_valid_names_are_accepted(
    gvr: GVR, kind: str, api_version: str, meta: dict[str, str]
) -> None:
    body = _obj(kind, api_version, **meta)
    if kind == "Service":  # a Service needs ports (unless headless)
        body["spec"] = {"ports": [{"port": 80}]}
    created = Store().create(gvr, body, "default")
    assert created["metadata"]["name"]
