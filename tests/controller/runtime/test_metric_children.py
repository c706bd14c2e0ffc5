"""Metrics.child caches labelled children without changing what is exported."""

from __future__ import annotations

from jobset_infra.controller.runtime.metrics import Metrics


def test_a_cached_child_counts_into_the_exported_series() -> None:
    metrics = Metrics()
    first = metrics.child(metrics.rest_duration, verb="GET", host="h")
    assert metrics.child(metrics.rest_duration, verb="GET", host="h") is first
    first.observe(0.2)
    metrics.child(metrics.rest_duration, verb="PUT", host="h").observe(0.3)
    labels = {"verb": "GET", "host": "h"}
    assert metrics.sample("rest_client_request_duration_seconds_count", labels) == 1.0
    assert metrics.sample("rest_client_request_duration_seconds_sum", labels) == 0.2
