"""The `--real` block of RESULTS.md: tables of ours beside upstream, targets, versions, a plot.

Runs are paired: the two controllers' runs of one case in one round ran back to back, so every
ratio ours/upstream is taken within a pair and the tables show the median (and range) of those
per-pair ratios next to the medians of the times themselves.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from benchmarks.real.scenarios import Run
from benchmarks.report import spread
from jobset_infra.cluster.binaries import find_tools

if TYPE_CHECKING:

    from benchmarks.real.peers import Peer
    from benchmarks.real.run import Results

Metric = Callable[[Run], float | None]
OURS, UPSTREAM = "ours", "upstream"


def versions(peers: Iterable[Peer]) -> dict[str, str]:
    out = {f"{p.name} controller": p.version() for p in peers}
    out.update(find_tools().version_lines())
    go = shutil.which("go")
    if go:
        out["go"] = subprocess.run([go, "version"], capture_output=True, text=True,
                                   check=False).stdout.strip()
    out["python"] = f"{platform.python_implementation()} {platform.python_version()}"
    return out


def groups(runs: Sequence[Run], scenario: str) -> dict[tuple[int, str], list[Run]]:
    out: dict[tuple[int, str], list[Run]] = {}
    for run in runs:
        if run.scenario == scenario:
            out.setdefault((run.size, run.limits), []).append(run)
    return dict(sorted(out.items(), key=lambda kv: (kv[0][1] != "500/500", kv[0][0])))


def values(runs: Iterable[Run], who: str, metric: Metric) -> list[float]:
    return [v for r in runs if r.controller == who and (v := metric(r)) is not None]


def pairs(runs: Iterable[Run]) -> list[tuple[Run, Run]]:
    """(ours, upstream) of each case and round: the two runs made back to back."""
    by_pair: dict[tuple[str, int, str, int], dict[str, Run]] = {}
    for run in runs:
        key = (run.scenario, run.size, run.limits, run.round)
        by_pair.setdefault(key, {})[run.controller] = run
    return [(r[OURS], r[UPSTREAM]) for _, r in sorted(by_pair.items())
            if OURS in r and UPSTREAM in r]


def ratios(runs: Iterable[Run], metric: Metric) -> list[float]:
    out = []
    for ours, theirs in pairs(runs):
        a, b = metric(ours), metric(theirs)
        if a is not None and b:
            out.append(a / b)
    return out


def cell(items: list[float], fmt: str = "{:.2f}", prefix: str = "") -> str:
    return prefix + spread(items).text(fmt) if items else "-"


class PhaseMetric:
    """`run.<phase>.<attr>`, knowing when the value is only a lower bound (a milestone the run
    gave up on at its phase timeout)."""

    def __init__(self, phase: str, attr: str) -> None:
        self.phase, self.attr = phase, attr

    def __call__(self, run: Run) -> float | None:
        phase = getattr(run, self.phase)
        return float(getattr(phase, self.attr)) if phase else None

    def bounded(self, run: Run) -> bool:
        phase = getattr(run, self.phase)
        return phase is not None and self.attr in phase.missed


def _bounded(runs: Iterable[Run], who: str, metric: Metric) -> bool:
    return isinstance(metric, PhaseMetric) and any(
        metric.bounded(r) for r in runs if r.controller == who)


def median(items: list[float]) -> float | None:
    return spread(items).median if items else None


def side_by_side(runs: list[Run], metric: Metric, fmt: str = "{:.2f}") -> list[str]:
    """ours | upstream | ratio cells for one metric; "≥" marks a time some run gave up on
    (so its ratio is a bound too: "≤" when upstream's time is the bound)."""
    ours, theirs = _bounded(runs, OURS, metric), _bounded(runs, UPSTREAM, metric)
    ratio = "≥" if ours and not theirs else "≤" if theirs and not ours else "?" if ours else ""
    return [cell(values(runs, OURS, metric), fmt, "≥" if ours else ""),
            cell(values(runs, UPSTREAM, metric), fmt, "≥" if theirs else ""),
            cell(ratios(runs, metric), prefix=ratio)]


def start_of(attr: str) -> PhaseMetric:
    return PhaseMetric("start", attr)


def recovery_of(attr: str) -> PhaseMetric:
    return PhaseMetric("recovery", attr)


def scale_tables(runs: Sequence[Run]) -> list[str]:
    grouped = groups(runs, "scale")
    if not grouped:
        return []
    lines = []
    for title, pick in (("Start: JobSet created →", start_of),
                        ("Recovery: one Pod exits 1 →", recovery_of)):
        lines += [f"#### {title} all N Jobs exist / all N Pods Running (seconds; ratio "
                  "ours/upstream per pair)", "",
                  "| N | client limit | ours: Jobs | upstream: Jobs | ratio | ours: Running "
                  "| upstream: Running | ratio |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
        for (n, limits), group in grouped.items():
            row = [str(n), limits, *side_by_side(group, pick("jobs_s")),
                   *side_by_side(group, pick("running_s"))]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return lines


def _mean_attempt_ms(run: Run) -> float | None:
    attempts = run.scheduler.get("attempts", 0)
    return 1000 * run.scheduler.get("attempt_seconds", 0) / attempts if attempts else None


def placement_tables(runs: Sequence[Run]) -> list[str]:
    grouped = groups(runs, "placement")
    if not grouped:
        return []
    lines = [
        "#### Exclusive placement: S slices of 4 Pods on S v5e 4x4 pools, created → every Pod "
        "Running", "",
        "| S | Pods | ours s | upstream s | ratio | ours Pods/s | upstream Pods/s | ratio "
        "| Pods with affinity: ours / upstream | scheduler ms per attempt: ours / upstream "
        "| upstream: webhook calls (rejected) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (s, _), group in grouped.items():
        rate = side_by_side(group, start_of("pods_per_s"), "{:.1f}")
        affinity = (f"{cell(values(group, OURS, lambda r: r.affinity_pods), '{:.0f}')} / "
                    f"{cell(values(group, UPSTREAM, lambda r: r.affinity_pods), '{:.0f}')}")
        attempt = (f"{cell(values(group, OURS, _mean_attempt_ms), '{:.1f}')} / "
                   f"{cell(values(group, UPSTREAM, _mean_attempt_ms), '{:.1f}')}")
        calls = values(group, UPSTREAM, lambda r: r.webhooks.get("calls"))
        rejected = values(group, UPSTREAM, lambda r: r.webhooks.get("rejections"))
        hooks = f"{cell(calls, '{:.0f}')} ({cell(rejected, '{:.0f}')})"
        lines.append("| " + " | ".join([str(s), str(s * 4),
                                         *side_by_side(group, start_of("running_s")), *rate,
                                         affinity, attempt, hooks]) + " |")
    recovered = {k: g for k, g in grouped.items() if any(r.recovery for r in g)}
    if recovered:
        lines += ["", "#### Exclusive placement, recovery: one Pod exits 1 → every Pod of "
                  "the new attempt Running", "",
                  "| S | ours: Jobs | upstream: Jobs | ratio | ours: Running | upstream: "
                  "Running | ratio | ours Pods/s | upstream Pods/s |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for (s, _), group in recovered.items():
            row = [str(s), *side_by_side(group, recovery_of("jobs_s")),
                   *side_by_side(group, recovery_of("running_s")),
                   *side_by_side(group, recovery_of("pods_per_s"), "{:.1f}")[:2]]
            lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    return lines


def _writes(phase: str) -> Metric:
    return lambda r: float(getattr(r, phase).writes) if getattr(r, phase) else None


def cost_table(runs: Sequence[Run]) -> list[str]:
    lines = ["#### What each run cost the controller (API server audit log; psutil)", "",
             "| scenario | size | limit | writes start: ours / upstream | writes recovery "
             "| writes after convergence | CPU s | CPU ms per write | peak RSS MiB |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for scenario in ("scale", "placement", "footprint", "footprint-pods"):
        for (size, limits), group in groups(runs, scenario).items():
            def both(metric: Metric, fmt: str = "{:.0f}", group: list[Run] = group) -> str:
                return (f"{cell(values(group, OURS, metric), fmt)} / "
                        f"{cell(values(group, UPSTREAM, metric), fmt)}")
            lines.append("| " + " | ".join([
                scenario, str(size), limits, both(_writes("start")), both(_writes("recovery")),
                both(lambda r: float(r.quiet_writes)), both(lambda r: r.cpu_s, "{:.1f}"),
                both(lambda r: r.cpu_ms_per_write, "{:.2f}"),
                both(lambda r: r.peak_rss_mib)]) + " |")
    lines.append("")
    kinds = _write_kinds(runs)
    if kinds:
        lines += ["Writes by kind, summed over every run of each controller: " + kinds, ""]
    return lines


def time_table(runs: Sequence[Run]) -> list[str]:
    """From the controllers' own /metrics and the API server's: where their wall time went."""
    lines = ["#### Where the controllers' time went (their /metrics; the API server's webhook "
             "metrics), per run", "",
             "| scenario | size | limit | reconciles: ours / upstream | seconds in reconcile "
             "| seconds waiting on the client limit | upstream: seconds in its Pod reconciler "
             "| upstream: webhook requests, seconds serving them | API server: seconds in "
             "upstream's webhooks |", "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    scenarios = ("scale", "placement", "footprint", "footprint-pods")
    for scenario in scenarios:
        for (size, limits), group in groups(runs, scenario).items():
            def both(key: str, fmt: str = "{:.1f}", group: list[Run] = group) -> str:
                return (f"{cell(values(group, OURS, _own(key)), fmt)} / "
                        f"{cell(values(group, UPSTREAM, _own(key)), fmt)}")

            served = (f"{cell(values(group, UPSTREAM, _own('webhook_requests')), '{:.0f}')}, "
                      f"{cell(values(group, UPSTREAM, _own('webhook_s')), '{:.1f}')}")
            waited = cell(values(group, UPSTREAM, lambda r: r.webhooks.get("seconds")),
                          "{:.1f}")
            lines.append("| " + " | ".join([
                scenario, str(size), limits, both("reconciles", "{:.0f}"), both("reconcile_s"),
                both("rate_limited_s"),
                cell(values(group, UPSTREAM, _own("pod_reconcile_s")), "{:.1f}"),
                served, waited]) + " |")
    return [*lines, ""]


def _own(key: str) -> Metric:
    return lambda r: r.controller_metrics.get(key)


def _write_kinds(runs: Sequence[Run]) -> str:
    parts = []
    for who in (OURS, UPSTREAM):
        total: dict[str, int] = {}
        for run in runs:
            if run.controller != who:
                continue
            for phase in (run.start, run.recovery):
                for key, count in (phase.write_kinds if phase else {}).items():
                    total[key] = total.get(key, 0) + count
        if total:
            parts.append(f"{who}: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    return "; ".join(parts)


FOOTPRINTS = {"footprint": "suspended JobSets: the Jobs exist, no Pod does",
              "footprint-pods": "every Job's Pod Running (upstream's Pod informer caches them)"}


def footprint_table(runs: Sequence[Run]) -> list[str]:
    lines = []
    for scenario, what in FOOTPRINTS.items():
        lines += _footprint(runs, scenario, what)
    return lines


def _footprint(runs: Sequence[Run], scenario: str, what: str) -> list[str]:
    lines = []
    for (size, _), group in groups(runs, scenario).items():
        lines += [f"#### Footprint: {size:,} Jobs in {max(1, size // 1000)} JobSets, {what}; "
                  "idle controller", "",
                  "| measurement | ours | upstream | ratio |", "|---|---:|---:|---:|"]
        for label, metric, fmt in (
                ("RSS before the JobSets, MiB", lambda r: r.baseline_rss_mib, "{:.0f}"),
                (f"RSS with {size:,} Jobs cached, MiB", lambda r: r.rss_mib, "{:.0f}"),
                ("peak RSS, MiB", lambda r: r.peak_rss_mib, "{:.0f}"),
                ("CPU s until the JobSets' status counted every Job and the controller "
                 "settled", lambda r: r.cpu_s, "{:.1f}"),
                ("CPU ms per write", lambda r: r.cpu_ms_per_write, "{:.2f}"),
                ("created → all Jobs exist, s", start_of("jobs_s"), "{:.1f}"),
                ("created → status counts every Job (ready, or suspended), s",
                 start_of("ready_s"), "{:.1f}")):
            lines.append(f"| {label} | " + " | ".join(side_by_side(group, metric, fmt)) + " |")
        lines.append("")
    return lines


def _check(name: str, ratio: float | None, limit: float, bound: str = "") -> str:
    if ratio is None:
        return f"- {name}: not measured in this invocation."
    return (f"- {name}: {bound}{ratio:.2f} — {'met' if ratio <= limit else 'missed'} "
            f"(≤ {limit:g}).")


def _ratio_check(name: str, group: list[Run], metric: Metric, limit: float) -> str:
    ours, theirs = _bounded(group, OURS, metric), _bounded(group, UPSTREAM, metric)
    bound = "≤ " if theirs and not ours else "≥ " if ours and not theirs else ""
    return _check(name, median(ratios(group, metric)), limit, bound)


def targets(runs: Sequence[Run]) -> list[str]:
    lines = ["#### Targets (medians of per-pair ratios ours/upstream)", ""]
    for (n, limits), group in groups(runs, "scale").items():
        limit = 1.0 if limits == "500/500" else 0.7
        for label, metric in (("start, Jobs", start_of("jobs_s")),
                              ("start, Running", start_of("running_s")),
                              ("recovery, Jobs", recovery_of("jobs_s")),
                              ("recovery, Running", recovery_of("running_s"))):
            lines.append(_ratio_check(f"N={n} at {limits}, {label}", group, metric, limit))
    for (s, _), group in groups(runs, "placement").items():
        lines.append(_ratio_check(f"placement S={s}, created → Running", group,
                                  start_of("running_s"), 1.0))
        if any(r.recovery for r in group):
            lines.append(_ratio_check(f"placement S={s}, recovery → Running", group,
                                      recovery_of("running_s"), 1.0))
        rate = median(ratios(group, start_of("pods_per_s")))
        if rate is not None and s == max(k[0] for k in groups(runs, "placement")):
            lines.append(f"- Pods/s at S={s}: {rate:.2f}x upstream's — "
                         f"{'met' if rate >= 3 else 'missed'} (≥ 3x).")
    ours = [r for r in runs if r.controller == OURS]
    affinity = sum(r.affinity_pods for r in ours)
    lines.append(f"- Pods of ours with an inter-pod affinity: {affinity} — "
                 f"{'met' if affinity == 0 else 'missed'} (0).")
    quiet = max((r.quiet_writes for r in ours), default=0)
    lines.append(f"- Writes after convergence, ours: at most {quiet} in any run — "
                 f"{'met' if quiet == 0 else 'missed'} (0).")
    cpu = median(ratios(runs, lambda r: r.cpu_ms_per_write or None))
    lines.append(_check("CPU per write, all runs", cpu, 1.0))
    for scenario, what in FOOTPRINTS.items():
        rss = median(ratios([r for r in runs if r.scenario == scenario], lambda r: r.rss_mib))
        lines.append(_check(f"RSS with the footprint's Jobs cached ({what})", rss, 1.0))
    return [*lines, ""]


def markdown(results: Results, *, command: str, quick: bool, machine: str, plot: str) -> str:
    import datetime as dt

    per_run = [r.load[0] for r in results.runs]
    now = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
    if results.source is None:
        loads = " → ".join("/".join(f"{x:.1f}" for x in load) for load in results.load)
        when = (f"Measured {now} in {results.seconds:.0f} s with `{command}`"
                f"{' (quick mode)' if quick else ''}. Machine: {machine}. Load average "
                f"(1/5/15 min) at start → end: {loads}")
    else:
        when = (f"Reported {now} with `{command}` from runs measured earlier "
                f"({len(results.runs)} runs, {results.seconds:.0f} s of them). Machine: {machine}")
    lines = [
        "## Real control plane: ours beside upstream JobSet (`python -m benchmarks --real`)",
        "",
        f"{when}; 1-minute load at the start of each run: {cell(per_run, '{:.1f}')}. The "
        "machine is shared: compare the ratios (each taken between two runs back to back), not "
        "seconds across invocations.",
        "",
        "Versions: " + "; ".join(f"{k}: {v}" for k, v in results.versions.items()) + ".",
        "",
        "Setup: a fresh local cluster per run (etcd, kube-apiserver with an audit log of the "
        "two controllers' users, kube-controller-manager with the Job controller and garbage "
        "collector, kube-scheduler, kwok Nodes shaped like GKE pools); the controller out of "
        "cluster as a user in system:masters; upstream's webhooks served on loopback and "
        "registered with a URL and a self-signed CA. Client limit \"500/500\" is both "
        "controllers' default; \"100000/100000\" lifts it (and the controller-manager's and "
        "scheduler's 500/1000 with it). Times are medians (min-max) over the rounds.",
        "",
        f"![ours and upstream on the real control plane]({plot})",
        "",
    ]
    lines += scale_tables(results.runs)
    lines += placement_tables(results.runs)
    lines += footprint_table(results.runs)
    lines += cost_table(results.runs)
    lines += time_table(results.runs)
    lines += targets(results.runs)
    gave_up = [f"{r.scenario} {r.size} {r.controller} round {r.round}: {p.incomplete}"
               for r in results.runs for p in (r.start, r.recovery) if p and p.incomplete]
    if gave_up:
        lines += ["≥: a lower bound; these runs gave up at the phase timeout "
                  "(120 s + 0.5 s per Job and per Pod): " + "; ".join(gave_up) + ".", ""]
    if results.failures:
        lines += ["Failed runs (not in the tables): " + "; ".join(results.failures), ""]
    return "\n".join(lines)
