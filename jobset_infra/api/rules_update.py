"""The rules of upstream's ValidateUpdate for ElasticJobSet (gate on): parallelism and
completions of Indexed jobs change while the JobSet runs, everything else of a replicated job
stays as it was; P == C >= 1, and never once the JobSet finished. They are in the CRD an install
renders with the gate on (`crd.generate.generate_crd(gates)`), not in the committed one.
"""

from __future__ import annotations

from typing import Final

from jobset_infra.api import constants as c
from jobset_infra.api import k8s_openapi
from jobset_infra.api.features import Feature
from jobset_infra.api.rule_base import Rule, unchanged, when

__all__ = ["all_but_sizes_unchanged", "replicated_job_update_rules"]


def _projection(rjobs: str, path: str) -> str:
    """Each replicated job's field at `path` as a one-item list (none when absent), so lists of
    one type compare (Kubernetes' CEL wants homogeneous literals)."""
    steps = path.split(".")
    node, value = "r", "r." + path
    guarded = f"[{value}]"
    prefixes = [".".join(steps[: i + 1]) for i in range(len(steps))]
    for prefix in reversed(prefixes):
        if prefix == "template":
            continue  # required
        guarded = when(f"has({node}.{prefix})", guarded, "[]")
    return f"{rjobs}.map(r, {guarded})"


def all_but_sizes_unchanged(rjobs: str, old_rjobs: str) -> str:
    """Every field of every replicated job as it was, except parallelism and completions: one
    comparison of projected lists per field, which costs the API server's CEL estimate about
    what comparing the whole lists does (per-item rules over every field cost 100 times more)."""
    paths = ["groupName", "replicas", "template.metadata"] + [
        f"template.spec.{f}"
        for f in sorted(k8s_openapi.definition(k8s_openapi.JOB_SPEC)["properties"])
        if f not in _ELASTIC
    ]
    return " && ".join(
        f"{_projection(rjobs, path)} == {_projection(old_rjobs, path)}" for path in paths
    )


_JOB_TEMPLATE_SPEC: Final = "spec.replicatedJobs.[].template.spec"
_ELASTIC: Final = ("parallelism", "completions")


def replicated_job_update_rules() -> list[Rule]:
    """ElasticJobSet's conditions on a scaling update (gate on): Indexed only, P == C >= 1, not
    once finished. Transition rules on list items, correlated by replicated job name."""
    pc_unchanged = unchanged(_ELASTIC)
    indexed = when("has(self.completionMode)", f"self.completionMode == "
                    f"'{c.COMPLETION_MODE_INDEXED}'", "false")
    at_least_one = " && ".join(when(f"has(self.{f})", f"self.{f} >= 1") for f in _ELASTIC)
    equal = when("has(self.parallelism)", when(
        "has(self.completions)", "self.parallelism == self.completions"))
    return [
        Rule(
            "only Indexed replicated jobs scale",
            _JOB_TEMPLATE_SPEC,
            "parallelism and completions can change only for Indexed replicated jobs",
            cel=f"({pc_unchanged}) ? true : {indexed}",
            gate=Feature.ELASTIC_JOBSET,
        ),
        Rule(
            "scaled parallelism and completions are at least one",
            _JOB_TEMPLATE_SPEC,
            c.ELASTIC_MIN_MESSAGE,
            cel=f"({pc_unchanged}) ? true : ({at_least_one})",
            field_path=".parallelism",
            gate=Feature.ELASTIC_JOBSET,
        ),
        Rule(
            "scaled parallelism equals completions",
            _JOB_TEMPLATE_SPEC,
            c.ELASTIC_EQUAL_MESSAGE,
            cel=f"({pc_unchanged}) ? true : {equal}",
            field_path=".completions",
            gate=Feature.ELASTIC_JOBSET,
        ),
        Rule(
            "a finished JobSet does not scale",
            "",
            c.ELASTIC_TERMINAL_MESSAGE,
            cel=when(_FINISHED, f"{_sizes('self')} == {_sizes('oldSelf')}"),
            field_path=".spec.replicatedJobs",
            gate=Feature.ELASTIC_JOBSET,
        ),
    ]


_FINISHED: Final = when(
    "has(oldSelf.status)",
    when("has(oldSelf.status.terminalState)",
          f"oldSelf.status.terminalState in ['{c.CONDITION_COMPLETED}', '{c.CONDITION_FAILED}']",
          "false"),
    "false",
)


def _sizes(root: str) -> str:
    """Each replicated job's [parallelism, completions] (-1 when unset)."""
    spec = "r.template.spec"
    pair = "[" + ", ".join(when(f"has({spec}.{f})", f"{spec}.{f}", "-1") for f in _ELASTIC) + "]"
    rjobs = when(f"has({root}.spec)", when(f"has({root}.spec.replicatedJobs)",
                                              f"{root}.spec.replicatedJobs", "[]"), "[]")
    return f"{rjobs}.map(r, " + when(f"has({spec})", pair, "[]") + ")"
