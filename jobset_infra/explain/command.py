"""`jobset-infra explain JOBSET`: why a JobSet is (not) running, from a kubeconfig, read-only.

    jobset-infra explain train -n team-a              # text
    jobset-infra explain train -n team-a -o json      # for scripts

It reads (get and list only) the JobSet, its Jobs and pods, the Nodes and every Job, the
controller's slice-health ledger and the Kueue objects, and prints one answer: the state, what
blocks it at each layer (Kueue quota and admission checks, pools free / occupied / kept out /
not ready, unschedulable pods, containers that cannot start, failed Jobs with their causes)
and what would unblock it. Exit status 0 when it could explain, 1 when the JobSet or the
cluster cannot be read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

__all__ = ["add_arguments", "render_text", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("jobset", help="the JobSet's name")
    parser.add_argument("-n", "--namespace", default="default")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--context", default=None, help="kubeconfig context")
    parser.add_argument("--controller-namespace", default="jobset-system",
                        help="where the controller keeps its slice-health ledger")
    parser.add_argument("--keep-out-half-life", type=float, default=600.0, metavar="SECONDS",
                        help="the controller's placement.keepOutHalfLife, in seconds")
    parser.add_argument("--keep-out-threshold", type=float, default=0.5,
                        help="the controller's placement.keepOutThreshold")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    from jobset_infra.controller.runtime.auth import AuthError
    from jobset_infra.controller.runtime.kube_errors import ApiError

    try:
        found = asyncio.run(_explain(args))
    except (AuthError, ApiError, OSError) as err:
        print(f"jobset-infra explain: {err}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(found, indent=2, default=str))
    else:
        print(render_text(found))
    return 0


async def _explain(args: argparse.Namespace) -> dict[str, Any]:
    from jobset_infra.controller.runtime import auth
    from jobset_infra.controller.runtime.kube import KubeClient
    from jobset_infra.explain.diagnosis import explain
    from jobset_infra.explain.gather import gather
    from jobset_infra.placement.pool_health import HealthPolicy

    access = await auth.load(args.kubeconfig, args.context)
    policy = HealthPolicy(half_life_seconds=args.keep_out_half_life,
                          threshold=args.keep_out_threshold,
                          enabled=args.keep_out_half_life > 0)
    async with KubeClient(access, enforce_permissions=False) as api:
        gathered = await gather(api, args.namespace, args.jobset,
                                controller_namespace=args.controller_namespace, policy=policy)
    return explain(gathered).to_json()


def render_text(found: dict[str, Any]) -> str:
    """The explanation as a person reads it."""
    lines = [f"JobSet {found['jobset']}: {found['state']}", f"  {found['summary']}"]
    if found["blockers"]:
        lines.append("Blocked by:")
        lines += [f"  [{b['layer']}] {b['subject']}: {b['reason']}: {b['message']}"
                  for b in found["blockers"]]
    if found["unblock"]:
        lines.append("To unblock:")
        lines += [f"  - {u}" for u in found["unblock"]]
    if found["workload"]:
        wl = found["workload"]
        lines.append(f"Kueue: Workload {wl['name']} in queue {wl['queue']} "
                     f"(ClusterQueue {wl['clusterQueue']}): quota reserved "
                     f"{wl['quotaReserved']}, admitted {wl['admitted']}, flavors "
                     f"{', '.join(wl['flavors']) or '-'}")
        for flavor, quota in wl["quota"].items():
            lines.append(f"  {flavor}: asks {quota['requested']} {quota['resource']}, "
                         f"{quota['used']} of {quota['nominal']} in use")
    if found["pools"]:
        lines.append("Pools:")
        lines += [f"  {p['name']}{' (spare)' if p['spare'] else ''}: {p['state']}"
                  f"{': ' + p['detail'] if p['detail'] else ''}" for p in found["pools"]]
    for failure in found["failures"]:
        lines.append(f"Failed Job {failure['job']}: {failure['cause']} ({failure['detail']})")
    lines.append("Conditions:")
    lines += [f"  {c['type']}={c['status']} {c['reason'] or ''}: {c['message'] or ''}"
              for c in found["conditions"]]
    return "\n".join(lines)
