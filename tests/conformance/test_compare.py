"""The normalisation replaces exactly the values the real server draws per run."""

from __future__ import annotations

import pytest

from tests.conformance.compare import generate_name_prefixes, normalise


def _conflict(manager: str) -> dict[str, str]:
    return {"reason": "FieldManagerConflict", "field": ".a",
            "message": f'conflict with "{manager}"'}


CASES = [
    ("a refused generateName create names the drawn name in its message and details",
     {"message": 'ConfigMap "Bad-wqnbj" is invalid', "details": {"name": "Bad-wqnbj"}},
     {"Bad-"},
     {"message": 'ConfigMap "Bad-<gen>" is invalid', "details": {"name": "Bad-<gen>"}}),
    ("the ServiceAccount admission's projected volume is named per run",
     {"volumes": [{"name": "kube-api-access-dk45m"}]}, set(),
     {"volumes": [{"name": "kube-api-access-<gen>"}]}),
    ("a delete precondition's message quotes the stored resourceVersion",
     {"message": "the ResourceVersion in the precondition (1) does not match the "
                 "ResourceVersion in record (486)"}, set(),
     {"message": "the ResourceVersion in the precondition (1) does not match the "
                 "ResourceVersion in record (<rv>)"}),
    ("an object quoted as JSON inside a message keeps its keys but not its version",
     {"message": 'patch: Invalid value: "{\\"resourceVersion\\":\\"284\\",\\"a\\":\\"12345\\"}"'},
     set(),
     {"message": 'patch: Invalid value: "{\\"resourceVersion\\":\\"<rv>\\",\\"a\\":\\"12345\\"}"'}),
    ("a name that only looks generated is kept when no prefix was sent",
     {"metadata": {"name": "web-bcdfg"}}, set(), {"metadata": {"name": "web-bcdfg"}}),
    ("apply conflicts are compared in a stable order",
     {"causes": [_conflict("b"), _conflict("a")]}, set(),
     {"causes": [_conflict("a"), _conflict("b")]}),
]


@pytest.mark.parametrize(("body", "prefixes", "want"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_normalise(body: dict[str, object], prefixes: set[str], want: dict[str, object]) -> None:
    assert normalise({"code": 200, "body": body}, prefixes)["body"] == want


def test_the_generate_name_prefixes_of_a_sequence_are_found_in_its_request_bodies() -> None:
    steps = [{"body": {"metadata": {"generateName": "web-"}}},
             {"body": {"items": [{"metadata": {"generateName": "Bad-"}}]}}, {"method": "GET"}]
    assert generate_name_prefixes(steps) == {"web-", "Bad-"}
