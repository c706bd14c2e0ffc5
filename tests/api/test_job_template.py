"""Job-template checks against the real API server's recorded answers for the Jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobset_infra.api.check import check_jobset
from jobset_infra.api.job_template import JOBS_REFUSED, pod_spec_errors
from tests.api.real_server.cases import JOB_CASES, jobset

ANSWERS = json.loads((Path(__file__).parent / "real_server" / "answers.json").read_text())


@pytest.mark.parametrize("case", [pytest.param(name, id=name) for name in JOB_CASES])
def test_pod_spec_errors_are_what_the_real_server_says_of_the_job(case: str) -> None:
    answer = ANSWERS["jobs"][case]
    errors = pod_spec_errors(JOB_CASES[case], "spec.template.spec")
    if answer["code"] == 400:  # a quantity that does not parse: the CRD's pattern refuses it
        assert errors == []
        return
    assert [(e.path, e.message) for e in errors] == [
        (c["field"], c["message"]) for c in answer["causes"]
    ]


@pytest.mark.parametrize(
    ("pod_spec", "field"),
    [
        pytest.param({"containers": []}, "containers", id="no containers"),
        pytest.param(
            {"containers": [{"name": "m", "image": "x", "ports": [{"containerPort": 99999}]}]},
            "containers[0].ports[0].containerPort",
            id="container port 99999",
        ),
        pytest.param(
            {"containers": [{"name": "m", "image": "x", "resources": {"requests": {"cpu": "-1"}}}]},
            "containers[0].resources.requests[cpu]",
            id="cpu -1",
        ),
        pytest.param(
            {"containers": [{"name": "Main", "image": "x"}]}, "containers[0].name",
            id="an uppercase container name",
        ),
    ],
)
def test_validate_says_the_jobset_is_stored_but_its_jobs_refused(
    pod_spec: dict[str, object], field: str
) -> None:
    errors = check_jobset(jobset({}, pod_spec)).errors
    prefix = "spec.replicatedJobs[0].template.spec.template.spec."
    assert [e.path for e in errors] == [prefix + field]
    assert errors[0].message.endswith(f"({JOBS_REFUSED})")


def test_a_valid_template_has_no_job_errors() -> None:
    assert check_jobset(jobset({})).errors == []
