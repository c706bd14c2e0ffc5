"""Metadata checks against the real API server's recorded answers (tests/api/real_server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.api.object_meta import metadata_errors
from tests.api.real_server.cases import METADATA_CASES

ANSWERS = json.loads((Path(__file__).parent / "real_server" / "answers.json").read_text())


def _causes(answer: dict[str, Any]) -> list[tuple[str, str]]:
    # The CRD path adds a note that CEL rules were skipped; it is not a metadata check.
    return sorted(
        (c["field"], c["message"]) for c in answer["causes"] if c["field"] != "<nil>"
    )


@pytest.mark.parametrize(
    "kind", [pytest.param("ConfigMap", id="a built-in kind"), pytest.param("JobSet", id="a CR")]
)
@pytest.mark.parametrize("case", [pytest.param(name, id=name) for name in METADATA_CASES])
def test_metadata_errors_are_the_real_servers(case: str, kind: str) -> None:
    answer = ANSWERS["metadata"][case][kind]
    errors = metadata_errors(METADATA_CASES[case], builtin=kind == "ConfigMap")
    assert sorted((e.path, e.message) for e in errors) == _causes(answer)
    assert (answer["code"] == 201) == (not errors)


def test_the_recorded_server_refused_every_case_but_the_valid_ones() -> None:
    answers = ANSWERS["metadata"].items()
    passed = {case for case, answer in answers if answer["ConfigMap"]["code"] == 201}
    assert passed == {
        "valid labels, annotations and finalizers pass",
        "annotations of exactly 256 KiB pass",
    }
