"""A JobSet the CRD takes but whose children the API server would refuse (`dot.ted`: its Service
and its pods' hostnames are not DNS-1035 labels) is reported at once as InvalidSpec, with the
words `jobset-infra validate` uses, and nothing is created for it; JobSets beside it go on."""

from __future__ import annotations

from jobset_infra.api import constants as c
from jobset_infra.api.defaults import default
from jobset_infra.api.validation import validate
from jobset_infra.controller.runtime.manager import RunningController
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import Cluster
from tests.integration.test_controller_behaviours import wait_condition, wait_jobs
from tests.waiting import until


async def test_a_jobset_whose_children_would_be_refused_is_invalid_at_once(
    cluster: Cluster, controller: RunningController
) -> None:
    dotted = make_jobset("dot.ted").replicated_job("w", replicas=2)
    await cluster.create_jobset(dotted)  # the CRD takes it: a DNS-1123 subdomain
    condition = await wait_condition(cluster, "dot.ted", c.CONDITION_INVALID_SPEC)
    assert condition["reason"] == c.INVALID_SPEC_REASON
    said = [str(p) for p in validate(default(dotted.model()))]
    assert said and all(line in condition["message"] for line in said), (
        "the same words as jobset-infra validate")
    warnings = await until(lambda: cluster.events(c.INVALID_SPEC_REASON), "one Warning event")
    assert [w["regarding"]["name"] for w in warnings] == ["dot.ted"]
    await cluster.create_jobset(make_jobset("after").replicated_job("w"))
    await wait_jobs(cluster, ["after-w-0"])  # the controller went on with the next JobSet
    assert "dot.ted" not in await cluster.services(), "no Service the API server refuses"
    assert await cluster.events("HeadlessServiceCreationFailed") == []
