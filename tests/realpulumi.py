"""The real Pulumi engine for the test tier that runs stacks on the real local cluster.

The engine is the CLI, language host and Kubernetes provider `make tools` builds. Without them
a test is skipped with the command to run; with JOBSET_REQUIRE_REAL=1 (CI) it fails instead,
as every real-tier test does (tests/realcluster.py).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.cluster.binaries import MissingBinaryError, find
from jobset_infra.cluster.engine import BINARIES, Engine, engine_env, project_copy
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.controller.runtime.kube import KubeClient
from tests.realcluster import REQUIRE_ENV

ROOT = Path(__file__).resolve().parents[1]
# Kinds whose objects come and go by themselves (not ours to clean up).
TRANSIENT_KINDS = frozenset({"Event", "events.k8s.io/Event"})
# The kubelets' heartbeats: a real node's Lease is renewed (and, after a missed renewal,
# created again) by the node itself, whatever a stack does.
NODE_LEASES = "kube-node-lease"


def engine_or_skip() -> None:
    try:
        for name in BINARIES:
            find(name)
    except MissingBinaryError as err:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {err}")
        pytest.skip(f"real Pulumi engine tier: {err}")


def stack_engine(cluster: RunningCluster, project: Path, stack: str) -> Engine:
    """The engine for a copy of the project whose `stack` targets `cluster`, its controller and
    Kueue from their images by digest, on the cluster's system node (`real_cluster(...,
    system_node=True)`), or anywhere on a cluster of real nodes."""
    if cluster.real is None:
        raise AssertionError("a stack's controller and Kueue run on real nodes: start the "
                             "cluster with system_node=True (tests.realcluster.real_cluster)")
    copy = project_copy(ROOT, project, Path(sys.prefix), stacks=[stack])
    place_system_pods(copy, stack, system=cluster.real.system)
    state = cluster.layout.folder / "pulumi"
    engine = Engine(copy, state, engine_env(state))
    engine.select(stack)
    engine.config_set(stack, "jobset-infra:kubeconfig", str(cluster.kubeconfig))
    return engine


def place_system_pods(project: Path, stack: str, *, system: bool) -> None:
    """In the copied stack file: the controller and Kueue images by digest, their Pods on the
    system node (`system`) or, on a cluster of untainted real nodes, anywhere."""
    from jobset_infra.cluster.command import controller_image
    from jobset_infra.cluster.install import system_node_placement
    from jobset_infra.cluster.kueue_system import kueue_image

    def place(section: dict[str, Any], image: str) -> None:
        section["image"] = image
        for key, value in system_node_placement().items():
            if system:
                section[key] = value
            else:
                section.pop(key, None)

    def change(config: dict[str, Any]) -> None:
        place(config.setdefault("jobset-infra:controller", {}), controller_image())
        kueue = config.setdefault("jobset-infra:kueue", {})
        if kueue.get("enabled", True):
            place(kueue.setdefault("install", {}), kueue_image())

    edit_stack_config(project, stack, change)


def edit_stack_config(project: Path, stack: str,
                      change: Callable[[dict[str, Any]], None]) -> None:
    """Change a stack's config file as YAML (structured values stay as written: a path
    `config set` turns the string "true" into a boolean)."""
    import yaml

    meta = yaml.safe_load((project / "Pulumi.yaml").read_text()) or {}
    path = project / meta.get("stackConfigDir", ".") / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text()) if path.exists() else None
    document = document or {}
    change(document.setdefault("config", {}))
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def kueue_chart() -> str:
    """The Kueue chart of the pinned sigs.k8s.io/kueue module (`make tools` downloads it)."""
    gomodcache = os.environ.get("GOMODCACHE") or str(Path.home() / "go" / "pkg" / "mod")
    return str(Path(gomodcache) / "sigs.k8s.io" / "kueue@v0.19.2" / "charts" / "kueue")


def run(work: Callable[[KubeClient], Any], cluster: RunningCluster) -> Any:
    async def go() -> Any:
        async with cluster.client() as api:
            return await work(api)

    return asyncio.run(go())


async def every_object(api: KubeClient) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of every object of every listable kind the server serves, but
    Events and the nodes' heartbeat Leases."""
    found: set[tuple[str, str, str]] = set()
    for group_version in await _group_versions(api):
        prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        resources = (await api.request("GET", prefix)).get("resources") or []
        for res in resources:
            if "/" in res["name"] or "list" not in (res.get("verbs") or []):
                continue
            kind = res["kind"] if group_version == "v1" else f"{group_version}/{res['kind']}"
            if kind.split("/")[-1] in TRANSIENT_KINDS or kind in TRANSIENT_KINDS:
                continue
            listed = await api.request("GET", f"{prefix}/{res['name']}")
            for item in listed.get("items") or []:
                meta = item["metadata"]
                if meta.get("namespace") != NODE_LEASES:
                    found.add((kind, meta.get("namespace", ""), meta["name"]))
    return found


async def _group_versions(api: KubeClient) -> Iterable[str]:
    groups = (await api.request("GET", "/apis")).get("groups") or []
    return ["v1", *(g["preferredVersion"]["groupVersion"] for g in groups)]


def example_copy(name: str, target: Path, *, packages: bool = False) -> Path:
    """A copy of examples/<name> in `target`: a Python program's virtualenv is this one, a
    YAML program's `packages:` paths are absolute (relative to the example, they would not
    resolve from the copy)."""
    import yaml

    source = ROOT / "examples" / name
    target.mkdir(parents=True, exist_ok=True)
    project = yaml.safe_load((source / "Pulumi.yaml").read_text())
    runtime = project.get("runtime")
    if isinstance(runtime, dict):
        runtime.setdefault("options", {})["virtualenv"] = sys.prefix
    if packages:
        project["packages"] = {name: str((source / path).resolve())
                               for name, path in (project.get("packages") or {}).items()}
    (target / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
    for path in source.glob("*.py"):
        (target / path.name).write_bytes(path.read_bytes())
    return target
