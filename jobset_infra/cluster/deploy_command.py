"""`jobset-infra deploy up | down | env`: the real path, with the real Pulumi engine.

    make up                      # = make tools, then jobset-infra deploy up
    eval "$(jobset-infra deploy env)" && pulumi stack -s local
    jobset-infra deploy down     # pulumi destroy, then the cluster down

`up` starts (or reuses) the local cluster with the stack's node pools, runs `pulumi up -s local`
(Pulumi's Automation API driving the CLI, language host and Kubernetes provider `make tools`
built; the CLI's lines printed as they come), and watches the stack's
JobSet until it finishes. `env` prints the shell exports that make plain `pulumi` commands use
the same engine, plugins, backend and passphrase (docs/stacks.md, "The real path").
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from jobset_infra.cluster.deploy import DeployOptions

ENGINE_VARS: Final = ("PATH", "PULUMI_HOME", "PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE",
                      "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "PULUMI_SKIP_UPDATE_CHECK",
                      "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = sub.add_parser("up", help="cluster, pulumi up, and the JobSet watched to its end")
    _common(up)
    up.add_argument("--auto-complete", type=float, default=10.0, metavar="SECONDS",
                    help="a new cluster's Job pods succeed this long after they run (default 10)")
    up.add_argument("--no-watch", action="store_true", help="return after pulumi up")
    up.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                    help="how long to wait for the JobSet to finish (default 600)")
    _common(sub.add_parser("down", help="pulumi destroy, then stop the cluster"))
    _common(sub.add_parser("env", help="print the exports for plain pulumi commands"))


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", "-s", default="local", help="stack name (default: local)")
    parser.add_argument("--name", default="local", help="cluster name (default: local)")


def run(args: argparse.Namespace) -> int:
    from jobset_infra.cluster.binaries import MissingBinaryError
    from jobset_infra.cluster.deploy import DeployError, DeployOptions, find_project
    from jobset_infra.cluster.engine import EngineError
    from jobset_infra.cluster.processes import ComponentError

    def say(line: str) -> None:
        print(f"[deploy] {line}", flush=True)

    def echo(line: str) -> None:  # the CLI's own output, as it comes
        print(line, flush=True)

    try:
        options = DeployOptions(project=find_project(Path.cwd()), stack=args.stack,
                                cluster_name=args.name)
        if args.action == "env":
            return _env(options)
        if args.action == "down":
            from jobset_infra.cluster.deploy import deploy_down

            deploy_down(options, say, echo)
            return 0
        return _up(args, options, say, echo)
    except (DeployError, EngineError, MissingBinaryError, ComponentError) as err:
        print(f"jobset-infra deploy {args.action}: {err}", file=sys.stderr)
        return 1


def _up(args: argparse.Namespace, options: DeployOptions, say: Callable[[str], None],
        echo: Callable[[str], None]) -> int:
    from dataclasses import replace

    from jobset_infra.cluster.deploy import deploy_up
    from jobset_infra.cluster.local import default_folder

    chosen = replace(options, auto_complete_seconds=args.auto_complete,
                     watch=not args.no_watch, watch_timeout=args.timeout)
    deploy_up(chosen, say, echo)
    kubeconfig = default_folder(options.cluster_name) / "kubeconfig"
    flags = "" if options.cluster_name == "local" else f" --name {options.cluster_name}"
    print(f"""
Look around:
  export KUBECONFIG={kubeconfig}
  kubectl get jobsets,jobs,pods -o wide
  kubectl get clusterqueues,localqueues,workloads -A
  eval "$(jobset-infra deploy env{flags})"; pulumi stack -s {options.stack}
Tear down:
  jobset-infra deploy down{flags}     # pulumi destroy, then the cluster stops
""")
    return 0


def _env(options: DeployOptions) -> int:
    from jobset_infra.cluster.deploy import DeployError, state_folder
    from jobset_infra.cluster.engine import engine_env
    from jobset_infra.cluster.local import default_folder, load_state

    cluster = load_state(default_folder(options.cluster_name))
    if cluster is None:
        raise DeployError(f"no cluster {options.cluster_name}; start it with `make up`")
    env = engine_env(state_folder(cluster), {**os.environ, "PATH": "$PATH"})
    for name in ENGINE_VARS:
        value = f'"{env[name]}"' if name == "PATH" else shlex.quote(env[name])
        print(f"export {name}={value}")
    print(f"export KUBECONFIG={shlex.quote(str(cluster.kubeconfig))}")
    return 0
