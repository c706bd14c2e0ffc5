"""docs/dashboards/: the resilience dashboard's Grafana and Cloud Monitoring forms are renders of
its one declaration (manifests/dashboards.py), and every query of each names only metrics the
controller exports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.manifests.dashboards import (
    CLOUD_RANGE,
    CLOUD_RATE,
    RESILIENCE,
    cloud_monitoring,
    grafana,
)

FOLDER = Path(__file__).resolve().parents[3] / "docs" / "dashboards"
DASHBOARD = FOLDER / "resilience.json"
CLOUD = FOLDER / "resilience-cloud-monitoring.json"
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
    """Every query of both committed forms."""
    dashboard = json.loads(DASHBOARD.read_text())
    grafana = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    cloud = []
    for tile in json.loads(CLOUD.read_text())["mosaicLayout"]["tiles"]:
        widget = tile["widget"]
        sets = widget["xyChart"]["dataSets"] if "xyChart" in widget else [widget["scorecard"]]
        cloud += [s["timeSeriesQuery"]["prometheusQuery"] for s in sets]
    assert len(cloud) == len(grafana)  # the same queries, one per chart line
    return grafana + cloud


@pytest.mark.parametrize(("path", "render"), [
    pytest.param(DASHBOARD, grafana, id="Grafana"),
    pytest.param(CLOUD, cloud_monitoring, id="Cloud Monitoring"),
])
def test_the_committed_forms_are_renders_of_the_one_declaration(
    path: Path, render: Any
) -> None:
    expected = json.dumps(render(RESILIENCE), indent=2) + "\n"
    assert path.read_text() == expected, f"{path.name} is stale: run tools/dashboards.py"


def test_both_forms_run_the_same_promql_but_for_the_windows() -> None:
    grafana_form, cloud_form = grafana(RESILIENCE), cloud_monitoring(RESILIENCE)
    for panel, tile in zip(grafana_form["panels"], cloud_form["mosaicLayout"]["tiles"],
                           strict=True):
        assert panel["title"] == tile["widget"]["title"]
        widget = tile["widget"]
        sets = widget["xyChart"]["dataSets"] if "xyChart" in widget else [widget["scorecard"]]
        for target, data in zip(panel["targets"], sets, strict=True):
            expr = target["expr"].replace("$__rate_interval", CLOUD_RATE).replace(
                "$__range", CLOUD_RANGE)
            assert data["timeSeriesQuery"]["prometheusQuery"] == expr


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
