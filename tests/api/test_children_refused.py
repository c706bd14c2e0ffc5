"""The problems whose children the API server would refuse (a Job, pod, Service or PVC name, a
label value the controller writes): the rules marked `children`, found with validate's words."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.defaults import default
from jobset_infra.api.rules import RULES
from jobset_infra.api.validation import children_refused, validate
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset

Build = Callable[[JobSetBuilder], JobSetBuilder]


@pytest.mark.parametrize(
    ("name", "build", "says"),
    [
        pytest.param("js", lambda b: b, None, id="a valid JobSet has none"),
        pytest.param("dot.ted", lambda b: b, "a DNS-1035 label must consist of",
                     id="a dot in the name: Job and pod names (and the Service's) are refused"),
        pytest.param("x" * 60, lambda b: b, c.JOB_NAME_TOO_LONG_MESSAGE,
                     id="a name too long for its Job names (the job-name label is 63 at most)"),
        pytest.param("js", lambda b: b.network(subdomain="Bad-Sub"),
                     "subdomain must be a DNS-1035 label", id="a Service name that is refused"),
        pytest.param("p" * 45, lambda b: b.job_spec("w", completionMode="Indexed",
                                                      completions=10 ** 9, parallelism=1),
                     c.POD_NAME_TOO_LONG_MESSAGE, id="pod names too long for an Indexed Job"),
        pytest.param("js", lambda b: b.replicated_job("w2", group_name="Big"), None,
                     id="a groupName validate refuses but children take: not a refusal"),
    ],
)
def test_children_refused(name: str, build: Build, says: str | None) -> None:
    js = default(build(make_jobset(name, "ns").replicated_job("w", replicas=2)).model())
    refused = children_refused(js)
    if says is None:
        assert refused == []
        return
    assert refused and all(says in str(p) for p in refused[:1])
    assert set(map(str, refused)) <= set(map(str, validate(js))), "validate's own words"


def test_every_rule_about_child_names_is_marked() -> None:
    marked = {r.id for r in RULES if r.children}
    assert marked == {
        "every Job name fits in 63 characters",
        "every Indexed Job's pod name fits in 63 characters",
        "the coordinator's label value fits in 63 characters",
        "every PVC name <template>-<jobset> fits in 63 characters",
        "the subdomain is a DNS-1035 label",
        "replicated job names make valid Job and pod names",
    }
