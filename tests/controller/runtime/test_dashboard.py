"""docs/dashboards/resilience.json: every query names only metrics the controller exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jobset_infra.controller.runtime.metrics import Metrics

DASHBOARD = Path(__file__).resolve().parents[3] / "docs" / "dashboards" / "resilience.json"
# PromQL words that are not metric names: functions, aggregations, modifiers, Grafana variables.
_WORDS = frozenset({
    "sum", "avg", "max", "min", "count", "rate", "increase", "irate", "histogram_quantile",
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
    "offset", "bool", "clamp_min", "clamp_max", "abs", "delta", "deriv", "topk", "bottomk",
})


def exported() -> set[str]:
    """Every series name the controller's registry can expose."""
    names: set[str] = set()
    for family in Metrics().registry.collect():
        if family.type == "counter":
            names.add(f"{family.name}_total")
        elif family.type == "histogram":
            names |= {f"{family.name}_{s}" for s in ("bucket", "sum", "count")}
        else:
            names.add(family.name)
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression."""
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"\b(by|without)\s*\([^)]*\)", "", expr)  # grouping labels
    expr = re.sub(r'"[^"]*"', "", expr)
    words = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", expr))
    return {w for w in words if w not in _WORDS}


def queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]


def test_every_query_names_only_exported_metrics() -> None:
    known = exported()
    found = [(q, metric_names(q) - known) for q in queries()]
    assert [(q, missing) for q, missing in found if missing] == []
    assert all(metric_names(q) for q in queries())  # each query names at least one metric


def test_the_resilience_metrics_are_all_on_the_dashboard() -> None:
    used = set().union(*(metric_names(q) for q in queries()))
    for family in ("jobset_recovery_seconds_bucket", "jobset_restarts_by_cause_total",
                   "jobset_phase_seconds_total", "jobset_topology_domain_failures_total",
                   "jobset_topology_domains_kept_out"):
        assert family in used


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        pytest.param('sum by (cause) (rate(jobset_recovery_secnds_bucket{x="y"}[5m]))',
                     {"jobset_recovery_secnds_bucket"}, id="a misspelt metric is found"),
        pytest.param("histogram_quantile(0.9, sum by (le) (rate(a_bucket[$__rate_interval])))",
                     {"a_bucket"}, id="functions, grouping labels and ranges are not names"),
    ],
)
def test_names_are_read_from_promql(expr: str, want: set[str]) -> None:
    assert metric_names(expr) == want
