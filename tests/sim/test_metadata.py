"""The sim refuses labels, annotations and finalizers as kube-apiserver v1.37.2 did (its answers
are recorded in tests/api/real_server), on create and on update, for built-in and custom kinds."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.sim.apiserver.errors import InvalidError
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.command import register_crd
from tests.api.real_server.cases import METADATA_CASES, configmap, jobset

ANSWERS = json.loads(
    (Path(__file__).parents[1] / "api" / "real_server" / "answers.json").read_text()
)
CONFIGMAPS = GVR("", "v1", "configmaps")
JOBSETS = GVR("jobset.x-k8s.io", "v1alpha2", "jobsets")
KINDS = {"ConfigMap": (CONFIGMAPS, configmap), "JobSet": (JOBSETS, jobset)}


@pytest.fixture(scope="module")
def store() -> Store:
    store = Store()
    register_crd(store)  # ~1 s: shared, and every create below is a dry run
    return store


def _recorded(case: str, kind: str) -> list[dict[str, str]]:
    causes = ANSWERS["metadata"][case][kind]["causes"]
    return sorted((c for c in causes if c["field"] != "<nil>"), key=json.dumps)


def _causes(error: InvalidError) -> list[dict[str, str]]:
    causes = (error.details or {})["causes"]
    return sorted(({"field": c["field"], "message": c["message"]} for c in causes), key=json.dumps)


@pytest.mark.parametrize("kind", [pytest.param(k, id=k) for k in KINDS])
@pytest.mark.parametrize("case", [pytest.param(name, id=name) for name in METADATA_CASES])
def test_create_answers_as_the_real_server(store: Store, case: str, kind: str) -> None:
    gvr, build = KINDS[kind]
    body: dict[str, Any] = build(METADATA_CASES[case])
    if ANSWERS["metadata"][case][kind]["code"] == 201:
        store.create(gvr, body, "default", dry_run=True)
        return
    with pytest.raises(InvalidError) as refused:
        store.create(gvr, body, "default", dry_run=True)
    assert _causes(refused.value) == _recorded(case, kind)


def test_an_update_that_adds_a_bad_label_is_refused(store: Store) -> None:
    body = {**configmap({}), "metadata": {"name": "updated"}}
    created = store.create(CONFIGMAPS, body, "default")
    changed = copy.deepcopy(created)
    changed["metadata"]["labels"] = {"bad key!": "v"}
    with pytest.raises(InvalidError, match=r'metadata\.labels: Invalid value: "bad key!"'):
        store.update(CONFIGMAPS, changed, "default")


def test_a_50_mb_annotation_is_refused(store: Store) -> None:
    body = configmap({"annotations": {"big": "x" * 50_000_000}})
    with pytest.raises(InvalidError, match="may not be more than 262144 bytes"):
        store.create(CONFIGMAPS, body, "default", dry_run=True)
