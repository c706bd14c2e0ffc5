"""Test harness for Pulumi components: run a construction under mocks, read back what it did.

Built on `jobset_infra.plan.offline.run_offline` (Pulumi's `set_mocks` with a monitor that
records every registration: type token, logical name, parent URN, explicit dependencies, inputs).
This module adds what component tests need on top:

* `run_component(build, outputs=[...])` constructs the component inside a program, awaits the named
  outputs (value and whether Pulumi marks them secret) and waits for every registration to finish;
* lookups by type and name that fail with the list of what *was* registered;
* isolation: Pulumi's process-global settings, root stack and config are reset before and after
  every run, so one test's stack, project or config never reaches the next.

Typical use::

    result = run_component(lambda: GkeCluster("gke", args), outputs=["kubeconfig"])
    cluster = result.inputs(GCP_CLUSTER, "gke")
    assert cluster["removeDefaultNodePool"] is True
    assert result.secret["kubeconfig"]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.config import set_all_config

from jobset_infra.plan.offline import OfflineMocks, OfflineRun, Registration, run_offline

__all__ = [
    "GCP_CLUSTER",
    "GCP_IAM_MEMBER",
    "GCP_NETWORK",
    "GCP_NODE_POOL",
    "GCP_RESOURCE_POLICY",
    "GCP_SERVICE_ACCOUNT",
    "K8S_PROVIDER",
    "ComponentRun",
    "HarnessMocks",
    "isolated_pulumi",
    "run_component",
]

GCP_CLUSTER = "gcp:container/cluster:Cluster"
GCP_NODE_POOL = "gcp:container/nodePool:NodePool"
GCP_RESOURCE_POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
GCP_SERVICE_ACCOUNT = "gcp:serviceaccount/account:Account"
GCP_NETWORK = "gcp:compute/network:Network"
GCP_SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
GCP_IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"
K8S_PROVIDER = "pulumi:providers:kubernetes"

T = TypeVar("T")


@dataclass
class ComponentRun(Generic[T]):
    """What one `run_component` call built, registered and resolved."""

    component: T
    run: OfflineRun
    values: dict[str, Any] = field(default_factory=dict)
    """Resolved values of the requested outputs."""
    secret: dict[str, bool] = field(default_factory=dict)
    """Whether Pulumi marks each requested output secret."""

    def of_type(self, type_token: str) -> list[Registration]:
        """Return every registration of ``type_token``, in registration order."""
        return self.run.of_type(type_token)

    def resource(self, type_token: str, name: str) -> Registration:
        """Return the one registration of this type and logical name; fail listing what exists."""
        found = [r for r in self.of_type(type_token) if r.name == name]
        if len(found) != 1:
            seen = sorted(f"{r.type} {r.name}" for r in self.run.registrations)
            raise AssertionError(f"want one {type_token} named {name!r}; registered: {seen}")
        return found[0]

    def inputs(self, type_token: str, name: str) -> Mapping[str, Any]:
        """Return the inputs (wire names, camelCase) of one registration."""
        return self.resource(type_token, name).inputs

    def children(self, parent: Registration) -> list[Registration]:
        """Return the direct children of a registration."""
        return list(self.run.children(parent.urn))

    def warnings(self) -> list[str]:
        """Return what the program logged at warning level."""
        return self.run.warnings()


class HarnessMocks(OfflineMocks):
    """The offline mocks, plus computed outputs component tests read (service-account emails)."""

    def new_resource(
        self, args: pulumi_mocks.MockResourceArgs
    ) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == GCP_SERVICE_ACCOUNT:
            project = args.inputs.get("project", "mock-project")
            state["email"] = f"{args.inputs['accountId']}@{project}.iam.gserviceaccount.com"
        if args.typ in (GCP_NETWORK, GCP_SUBNETWORK):
            kind = "global/networks" if args.typ == GCP_NETWORK else "regions/mock/subnetworks"
            state["selfLink"] = (f"https://www.googleapis.com/compute/v1/projects/"
                                 f"{args.inputs.get('project', 'mock-project')}/{kind}/{args.name}")
        return resource_id, state


def _reset_pulumi_globals() -> None:
    # Pulumi keeps its settings, root stack resource and config in module globals/contextvars.
    pulumi_settings.reset_options(project="project", stack="stack")
    set_all_config({}, [])


@contextmanager
def isolated_pulumi() -> Iterator[None]:
    """Reset Pulumi's global runtime state on entry and on exit."""
    _reset_pulumi_globals()
    try:
        yield
    finally:
        _reset_pulumi_globals()


def run_component(
    build: Callable[[], T],
    *,
    outputs: Sequence[str] = (),
    stack: str = "test",
    project: str = "jobset-infra",
    config: Mapping[str, str] | None = None,
    preview: bool = True,
) -> ComponentRun[T]:
    """Run ``build`` as a Pulumi program under mocks; resolve the component outputs named.

    Raises `ProgramError` (from the offline runner) when construction raises, with its message.
    """
    built: list[T] = []
    values: dict[str, Any] = {}
    secret: dict[str, bool] = {}

    async def program() -> None:
        component = build()
        built.append(component)
        for name in outputs:
            output: pulumi.Output[Any] = getattr(component, name)
            values[name] = await output.future()
            secret[name] = await output.is_secret()

    with isolated_pulumi():
        run = run_offline(
            program,  # type: ignore[arg-type]  # run_pulumi_func awaits an async program
            project=project,
            stack=stack,
            config=config,
            preview=preview,
            mocks=HarnessMocks(),
        )
    return ComponentRun(built[0], run, values, secret)
