"""The resilience dashboard: one declaration of its panels and queries, two forms (pure).

`RESILIENCE` declares each panel once: title, kind, unit and its PromQL queries with legends.
`grafana(d)` renders a Grafana dashboard (JSON model, a `prometheus` datasource variable);
`cloud_monitoring(d)` renders a Cloud Monitoring dashboard (the `Dashboard` resource of the
Monitoring API: `gcloud monitoring dashboards create --config-from-file=...`), whose charts run
the same PromQL against Managed Service for Prometheus, where the controller's metrics land
through `JobSetSystem(pod_monitoring=True)`. The files in docs/dashboards/ are these two renders
(`tools/dashboards.py` writes them; tests/controller/runtime/test_dashboard.py checks them
against this declaration and every query's metric names against the controller's registry).

A query's windows are written as `$RATE` (a rate window) and `$RANGE` (the span the panel
sums over). Grafana fills them from the dashboard (`$__rate_interval`, `$__range`); Cloud
Monitoring dashboards get fixed windows (`CLOUD_RATE`, and `CLOUD_RANGE` as a rolling window),
since its PromQL has no such variables. A legend names labels as `{label}`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "CLOUD_RANGE",
    "CLOUD_RATE",
    "RESILIENCE",
    "Dashboard",
    "Panel",
    "Query",
    "cloud_monitoring",
    "grafana",
]

CLOUD_RATE: Final = "5m"
CLOUD_RANGE: Final = "1h"
_GRAFANA_WINDOWS: Final = {"$RATE": "$__rate_interval", "$RANGE": "$__range"}
_CLOUD_WINDOWS: Final = {"$RATE": CLOUD_RATE, "$RANGE": CLOUD_RANGE}
# Grafana's unit ids -> the UCUM units Cloud Monitoring charts take ("1": a plain number).
_CLOUD_UNITS: Final = {"s": "s", "short": "1", "percentunit": "1"}


@dataclass(frozen=True)
class Query:
    """One PromQL query of a panel (`$RATE`, `$RANGE` windows) and its legend (`{label}`)."""

    expr: str
    legend: str


@dataclass(frozen=True)
class Panel:
    title: str
    kind: Literal["timeseries", "stat"]
    unit: Literal["s", "short", "percentunit"]
    queries: tuple[Query, ...]


@dataclass(frozen=True)
class Dashboard:
    title: str
    uid: str
    description: str
    tags: tuple[str, ...]
    panels: tuple[Panel, ...]


def _quantile(q: float, legend: str) -> Query:
    return Query(f"histogram_quantile({q}, sum by (le, cause) "
                 "(rate(jobset_recovery_seconds_bucket[$RATE])))", f"{legend} {{cause}}")


RESILIENCE: Final = Dashboard(
    title="jobset-infra: resilience",
    uid="jobset-infra-resilience",
    description=("Recovery time and goodput of JobSets by cause, and node-pool health, from the "
                 "jobset-infra controller's /metrics (docs/resilience.md). Every query names a "
                 "metric the controller exports (tests/controller/runtime/test_dashboard.py)."),
    tags=("jobset-infra", "tpu"),
    panels=(
        Panel("Time from a failure to every Job running again (p50, p90), by cause",
              "timeseries", "s", (_quantile(0.5, "p50"), _quantile(0.9, "p90"))),
        Panel("Recoveries by cause", "timeseries", "short", (Query(
            "sum by (cause) (increase(jobset_restarts_by_cause_total[$RANGE]))", "{cause}"),)),
        Panel("Mean recovery time by cause", "stat", "s", (Query(
            "sum by (cause) (increase(jobset_recovery_seconds_sum[$RANGE])) / sum by (cause) "
            "(increase(jobset_recovery_seconds_count[$RANGE]))", "{cause}"),)),
        Panel("Goodput: share of JobSet time with every Job running", "stat", "percentunit",
              (Query('sum(increase(jobset_phase_seconds_total{phase="running"}[$RANGE])) / '
                     "sum(increase(jobset_phase_seconds_total[$RANGE]))", "running"),)),
        Panel("JobSet time by phase (JobSets in each phase, on average)", "timeseries", "short",
              (Query("sum by (phase) (rate(jobset_phase_seconds_total[$RATE]))", "{phase}"),)),
        Panel("Failures recorded against node pools, by cause", "timeseries", "short", (Query(
            "sum by (cause) (increase(jobset_topology_domain_failures_total[$RATE]))",
            "{cause}"),)),
        Panel("Node pools kept out of assignments", "stat", "short",
              (Query("max(jobset_topology_domains_kept_out)", "kept out"),)),
        Panel("JobSets completed and failed", "timeseries", "short", (
            Query("sum(increase(jobset_completed_total[$RATE]))", "completed"),
            Query("sum(increase(jobset_failed_total[$RATE]))", "failed"))),
        Panel("Reconcile errors and p99 reconcile time", "timeseries", "short", (
            Query("sum(rate(controller_runtime_reconcile_errors_total[$RATE]))", "errors/s"),
            Query("histogram_quantile(0.99, sum by (le) "
                  "(rate(controller_runtime_reconcile_time_seconds_bucket[$RATE])))",
                  "p99 reconcile s"))),
    ),
)


def _windows(expr: str, windows: dict[str, str]) -> str:
    for token, value in windows.items():
        expr = expr.replace(token, value)
    return expr


def _legend(legend: str, open_: str, close: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: f"{open_}{m.group(1)}{close}", legend)


def grafana(dashboard: Dashboard) -> dict[str, Any]:
    """Return the Grafana form: two panels a row, a `datasource` variable for Prometheus."""
    source = {"type": "prometheus", "uid": "${datasource}"}
    panels = []
    for i, panel in enumerate(dashboard.panels):
        targets = [{"refId": chr(ord("A") + j),
                    "expr": _windows(q.expr, _GRAFANA_WINDOWS),
                    "legendFormat": _legend(q.legend, "{{", "}}"),
                    "datasource": source} for j, q in enumerate(panel.queries)]
        panels.append({
            "id": i + 1, "type": panel.kind, "title": panel.title, "datasource": source,
            "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
            "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
            "targets": targets,
        })
    return {
        "title": dashboard.title, "uid": dashboard.uid, "description": dashboard.description,
        "tags": list(dashboard.tags), "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "type": "datasource",
                                 "query": "prometheus", "label": "Prometheus"}]},
        "panels": panels,
    }


def cloud_monitoring(dashboard: Dashboard) -> dict[str, Any]:
    """Return the Cloud Monitoring form: a 48-column mosaic, two tiles a row. A stat of one
    series is a scorecard; every other panel an XY chart of its queries (a stat by label
    shows each label's value over time there)."""
    tiles = []
    for i, panel in enumerate(dashboard.panels):
        tiles.append({"xPos": 24 * (i % 2), "yPos": 16 * (i // 2), "width": 24, "height": 16,
                      "widget": {"title": panel.title, **_widget(panel)}})
    return {"displayName": dashboard.title, "mosaicLayout": {"columns": 48, "tiles": tiles}}


def _widget(panel: Panel) -> dict[str, Any]:
    def query(q: Query) -> dict[str, Any]:
        return {"prometheusQuery": _windows(q.expr, _CLOUD_WINDOWS),
                "unitOverride": _CLOUD_UNITS[panel.unit]}

    if panel.kind == "stat" and len(panel.queries) == 1 and "{" not in panel.queries[0].legend:
        return {"scorecard": {"timeSeriesQuery": query(panel.queries[0])}}
    return {"xyChart": {"dataSets": [
        {"timeSeriesQuery": query(q), "plotType": "LINE",
         "legendTemplate": _legend(q.legend, "${", "}")} for q in panel.queries]}}
