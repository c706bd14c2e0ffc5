"""Bodies whose shape the API server's JSON decoder refuses get 400, never a crash (500)."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.sim.apiserver.errors import BadRequestError, InvalidError
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store

CONFIGMAPS = GVR("", "v1", "configmaps")
NAMESPACES = GVR("", "v1", "namespaces")


@pytest.fixture
def store() -> Store:
    store = Store()
    store.create(NAMESPACES, {"metadata": {"name": "ns"}})
    return store


@pytest.mark.parametrize(
    ("metadata", "want_in_message"),
    [
        pytest.param([], "ObjectMeta", id="metadata that is a list"),
        pytest.param("x", "ObjectMeta", id="metadata that is a string"),
        pytest.param({"name": ["a"]}, "metadata.name", id="a name that is a list"),
        pytest.param({"name": "a", "namespace": 5}, "metadata.namespace", id="a numeric namespace"),
        pytest.param({"name": "a", "labels": ["x"]}, "metadata.labels",
                     id="labels that are a list"),
        pytest.param({"name": "a", "annotations": {"k": 1}}, "metadata.annotations",
                     id="an annotation value that is a number"),
    ],
)
def test_a_malformed_metadata_is_a_bad_request(
    store: Store, metadata: Any, want_in_message: str
) -> None:
    body = {"metadata": metadata, "data": {}}
    with pytest.raises(BadRequestError) as created:
        store.create(CONFIGMAPS, body, "ns")
    assert want_in_message in created.value.message
    with pytest.raises(BadRequestError):
        store.update(CONFIGMAPS, body, "ns")


def test_null_metadata_decodes_as_empty_and_then_needs_a_name(store: Store) -> None:
    with pytest.raises(InvalidError, match="name or generateName is required"):
        store.create(CONFIGMAPS, {"metadata": None}, "ns")


def test_a_body_that_is_not_an_object_is_a_bad_request(store: Store) -> None:
    with pytest.raises(BadRequestError):
        store.create(CONFIGMAPS, ["not", "an", "object"], "ns")  # type: ignore[arg-type]
