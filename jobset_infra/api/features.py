"""JobSet's feature gates: the one registry (upstream `pkg/features/features.go`).

Each gate is one member of `Feature`: its upstream name, default, stage and what it allows. API
validation, the controller core, the controller's `--feature-gates` flag and config file,
`jobset-infra validate --feature-gates` and the docs table (`python -m jobset_infra.api.features`
prints it; docs/api.md "Feature gates" holds it) all read this enum, so adding a gate is one line
here. Code asks `gates.enabled(Feature.X)` of a `FeatureGates` value it was handed; nothing reads
a gate from the environment. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Self

__all__ = ["Feature", "FeatureGateError", "FeatureGates", "Stage", "docs_table", "parse_gates"]


class Stage(StrEnum):
    """A gate's maturity, as upstream's `featuregate.PreRelease` names it."""

    ALPHA = "Alpha"
    BETA = "Beta"
    GA = "GA"
    DEPRECATED = "Deprecated"


class Feature(StrEnum):
    """Every JobSet feature gate. A member is `NAME = "UpstreamName", default, stage, "allows"`
    (with `True` after it for a gate locked to its default, as upstream locks GA gates)."""

    _value_: str
    default: bool
    stage: Stage
    allows: str
    locked: bool

    def __new__(
        cls, name: str, default: bool, stage: Stage, allows: str, locked: bool = False
    ) -> Feature:
        member = str.__new__(cls, name)
        member._value_ = name
        member.default = default
        member.stage = stage
        member.allows = allows
        member.locked = locked
        return member

    IN_PLACE_RESTART = ("InPlaceRestart", False, Stage.ALPHA,
                        "`restartStrategy: InPlaceRestart` (KEP-467)")
    TLS_OPTIONS = ("TLSOptions", True, Stage.GA,
                   "TLS minimum version and cipher suites from the config file", True)
    RESTART_JOB = ("RestartJob", False, Stage.ALPHA,
                   "the `RestartJob*` failure-policy actions and the `job-restart-attempt` label")
    ELASTIC_JOBSET = ("ElasticJobSet", False, Stage.ALPHA,
                      "changing `parallelism`/`completions` of Indexed replicated jobs; the "
                      "controller patches live Jobs")
    # Ahead of upstream's release: on its main branch as KEPs (implementable, v0.13).
    MUTABLE_POD_RESOURCES = ("MutablePodResourcesForSuspendedJobSets", False, Stage.ALPHA,
                             "changing container and init-container `resources` requests and "
                             "limits while suspended; resume carries them to the Jobs (KEP-1150,"
                             " upstream's main branch)")
    EXECUTION_ATTEMPTS = ("ExecutionAttemptsTracking", False, Stage.ALPHA,
                          "`status.executionAttempts` and the `execution-attempt` annotation, "
                          "counting restarts and resumes (KEP-1282, upstream's main branch)")
    # Ours, not upstream's (its issue #535 is open): off by default, as upstream behaves.
    CREATE_CHILDREN_ON_FIRST_RESUME = ("CreateChildrenOnFirstResume", False, Stage.ALPHA,
                                       "no Jobs and no headless Service for a JobSet created "
                                       "suspended until it is first resumed (upstream #535; "
                                       "ours, not an upstream gate)")


class FeatureGateError(ValueError):
    """A gate setting the registry refuses; the message names the gate and the fix."""


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The effective value of every gate: upstream's defaults, overridden where set. Hashable."""

    on: frozenset[Feature] = frozenset(f for f in Feature if f.default)

    def enabled(self, feature: Feature) -> bool:
        """True when `feature` is on."""
        return feature in self.on

    def as_dict(self) -> dict[str, bool]:
        """Every gate by its upstream name -> its effective value."""
        return {f.value: f in self.on for f in Feature}

    @classmethod
    def of(cls, overrides: Mapping[str, bool] | None = None) -> Self:
        """The defaults with `overrides` (gate name -> value) applied; raises FeatureGateError
        for an unknown gate or a locked gate set away from its default."""
        on = {f for f in Feature if f.default}
        for name, value in (overrides or {}).items():
            feature = _feature(name)
            if feature.locked and value is not feature.default:
                raise FeatureGateError(
                    f"{feature} is {feature.stage} and locked to {str(feature.default).lower()} "
                    "upstream; remove it"
                )
            (on.add if value else on.discard)(feature)
        return cls(frozenset(on))


def _feature(name: str) -> Feature:
    feature = _BY_NAME.get(name)
    if feature is None:
        known = ", ".join(sorted(Feature))
        raise FeatureGateError(f"unknown feature gate {name!r}; known: {known}")
    return feature


_BY_NAME: dict[str, Feature] = {f.value: f for f in Feature}


def parse_gates(text: str) -> dict[str, bool]:
    """`A=true,B=false` (the `--feature-gates` form) -> {A: True, B: False}; raises
    FeatureGateError naming the bad item (malformed, or a gate the registry does not know)."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or value.lower() not in ("true", "false"):
            raise FeatureGateError(f"{item!r} must look like Name=true or Name=false")
        gates[_feature(name).value] = value.lower() == "true"
    return gates


def docs_table(features: Iterable[Feature] = Feature) -> str:
    """The Markdown table of the gates, as docs/api.md holds it."""
    rows = ["| Gate | Default | Stage | Allows |", "|---|---|---|---|"]
    for f in features:
        default = f"{str(f.default).lower()}{' (locked)' if f.locked else ''}"
        rows.append(f"| `{f}` | {default} | {f.stage} | {f.allows} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(docs_table())
