"""`k8s_openapi`'s own validator gives jsonschema's Draft 2020-12 verdict, worded the same.

jsonschema (a dependency of kubernetes-validate) is the oracle here: each object, valid or
broken at one to three random places, gets the same `FieldError`s from `validate_definition`
as from jsonschema's errors worded by the same `_field_errors`.
"""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from jobset_infra.api import k8s_openapi as k
from jobset_infra.api.errors import FieldError

_EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Values that break, or happen to meet, what the definitions ask: types, int32/int64 edges,
# enum members and not, empty and non-empty containers.
_VALUES: tuple[Any, ...] = (
    None, True, False, 0, 1, 1.0, 1.5, -(2**40), 2**31, 2**63, "x", "", "Always", "TCP",
    "100m", [], [1], ["a"], {}, {"a": 1}, {"name": "c"}, [{"name": "c"}],
)
_KEYS = ("extra", "name", "image", "cpu", "limits", "protocol", "containerPort", "x")


@functools.cache
def _format_checker() -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker(formats=())
    for fmt in ("int32", "int64"):
        checker.checks(fmt)(functools.partial(k._in_int_range, fmt))
    return checker


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(k.schema(name), format_checker=_format_checker())


def _jsonschema_verdict(obj: Any, name: str) -> list[FieldError]:
    validator = _validator(name)
    return sorted({e for err in validator.iter_errors(obj)
                   for e in k._field_errors(err, "")})  # type: ignore[arg-type]


def _templates() -> list[dict[str, Any]]:
    found = []
    for path in sorted(_EXAMPLES.rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind") == "JobSet":
                found += [r["template"] for r in document["spec"]["replicatedJobs"]]
    return found


def _places(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, item in items:
        yield from _places(item, (*at, key))


def _mutated(obj: Any, rng: random.Random) -> Any:
    """`obj` with one to three places replaced, removed, or given an extra key."""
    obj = copy.deepcopy(obj)
    for _ in range(rng.randint(1, 3)):
        at = rng.choice(list(_places(obj)))
        parent = functools.reduce(lambda node, key: node[key], at[:-1], obj)
        choice = rng.random()
        if not at:
            obj = copy.deepcopy(rng.choice(_VALUES)) if choice < 0.2 else obj
        elif choice < 0.6:
            parent[at[-1]] = copy.deepcopy(rng.choice(_VALUES))
        elif choice < 0.8 and isinstance(parent, dict):
            parent.pop(at[-1])
        elif isinstance(parent[at[-1]], dict):
            parent[at[-1]][rng.choice(_KEYS)] = copy.deepcopy(rng.choice(_VALUES))
    return obj


@pytest.mark.slow
def test_the_examples_templates_and_their_mutations_get_jsonschemas_verdict() -> None:
    templates = _templates()
    assert len(templates) >= 5
    rng, broken = random.Random(31), 0
    for template in templates:
        assert k.validate_definition(template, k.JOB_TEMPLATE_SPEC) == []
        for _ in range(40):
            obj = _mutated(template, rng)
            want = _jsonschema_verdict(obj, k.JOB_TEMPLATE_SPEC)
            assert k.validate_definition(obj, k.JOB_TEMPLATE_SPEC) == want, obj
            broken += bool(want)
    assert broken > 25 * len(templates)  # most mutations break something


@pytest.mark.parametrize(
    ("name", "obj"),
    [
        pytest.param(k.PERSISTENT_VOLUME_CLAIM,
                     {"metadata": {"name": "data"},
                      "spec": {"accessModes": ["ReadWriteOnce"],
                               "resources": {"requests": {"storage": "1Gi"}}}},
                     id="a PersistentVolumeClaim template"),
        pytest.param("io.k8s.api.apps.v1.Deployment",
                     {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"},
                      "spec": {"selector": {"matchLabels": {"a": "b"}},
                               "strategy": {"rollingUpdate": {"maxSurge": "25%"}},
                               "template": {"spec": {"containers": [
                                   {"name": "a", "ports": [{"containerPort": 80}],
                                    "resources": {"limits": {"cpu": 1}}}]}}}},
                     id="a Deployment (int-or-string, quantities, list maps)"),
        pytest.param("io.k8s.api.core.v1.Service",
                     {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                      "spec": {"clusterIP": "None", "ports": [{"port": 80, "protocol": "TCP"}]}},
                     id="a Service (enums)"),
    ],
)
def test_other_definitions_and_their_mutations_get_jsonschemas_verdict(
    name: str, obj: dict[str, Any]
) -> None:
    rng = random.Random(name)
    assert k.validate_definition(obj, name) == _jsonschema_verdict(obj, name) == []
    for _ in range(80):
        mutated = _mutated(obj, rng)
        assert k.validate_definition(mutated, name) == _jsonschema_verdict(mutated, name), mutated


def test_a_quantity_of_null_is_valid_under_both_of_its_options_so_it_is_refused() -> None:
    obj = {"spec": {"template": {"spec": {"containers": [
        {"name": "a", "resources": {"limits": {"cpu": None}}}]}}}}
    got = k.validate_definition(obj, k.JOB_TEMPLATE_SPEC)
    assert got == _jsonschema_verdict(obj, k.JOB_TEMPLATE_SPEC)
    assert [e.path for e in got] == ["spec.template.spec.containers[0].resources.limits.cpu"]
