"""Draw the resilience dashboard's panels from one scrape of the controller's /metrics.

    .venv/bin/python -m benchmarks.plot_resilience benchmarks/runs/<stamp>-spares-metrics.txt \
        docs/resilience-dashboard.png

The scrape is taken at the end of a run whose counters started at zero, so each panel's
`increase(...[$__range])` over the run is the counter's value: recoveries and mean recovery time
by cause (`jobset_recovery_seconds`), failures that started them
(`jobset_restarts_by_cause_total`), time by phase and goodput (`jobset_phase_seconds_total`),
pool failures by cause (`jobset_topology_domain_failures_total`). Causes with no events are left
out.
"""

from __future__ import annotations

import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def by_label(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
             label: str) -> dict[str, float]:
    return {dict(labels)[label]: value for (n, labels), value in found.items()
            if n == name and value and label in dict(labels)}


def main(source: Path, target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = samples(source.read_text())
    counts = by_label(found, "jobset_recovery_seconds_count", "cause")
    sums = by_label(found, "jobset_recovery_seconds_sum", "cause")
    mean = {cause: sums.get(cause, 0.0) / n for cause, n in counts.items()}
    phases = by_label(found, "jobset_phase_seconds_total", "phase")
    panels = [
        ("Recoveries by cause\nincrease(jobset_restarts_by_cause_total)",
         by_label(found, "jobset_restarts_by_cause_total", "cause"), ""),
        ("Mean recovery time by cause\njobset_recovery_seconds_sum / _count", mean, "s"),
        ("JobSet time by phase\nincrease(jobset_phase_seconds_total)", phases, "s"),
        ("Failures recorded against node pools\nincrease(jobset_topology_domain_failures_total)",
         by_label(found, "jobset_topology_domain_failures_total", "cause"), ""),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, (title, values, unit) in zip(axes, panels, strict=True):
        ax.bar(list(values), list(values.values()), color="#3274d9")
        for i, v in enumerate(values.values()):
            ax.annotate(f"{v:.1f}{unit}" if unit else f"{v:.0f}", (i, v), ha="center",
                        va="bottom", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="x", labelsize=8)
    total = sum(phases.values())
    goodput = phases.get("running", 0.0) / total if total else 0.0
    fig.suptitle(f"jobset-infra resilience dashboard, from the controller's /metrics after "
                 f"{source.name} (goodput: running / all JobSet time = {goodput:.0%})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(target, dpi=110)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
