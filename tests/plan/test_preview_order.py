"""`apply_order`: one stable order for the plan's tree and files, dependencies first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.plan.preview import RegistrationLike, apply_order
from tests.stacks.stack_runs import run_stack


@dataclass(frozen=True)
class Reg:
    """A recorded registration reduced to what the order reads."""

    urn: str
    type: str
    name: str
    parent: str | None = None
    dependencies: tuple[str, ...] = ()
    inputs: Mapping[str, Any] = field(default_factory=dict)


def reg(name: str, kind: str = "kubernetes:core/v1:ConfigMap", **more: Any) -> Reg:
    return Reg(urn=f"urn:{name}", type=kind, name=name, **more)


def names(registrations: Sequence[RegistrationLike]) -> list[str]:
    return [r.name for r in registrations]


def placed_after_what_they_wait_for(ordered: Sequence[RegistrationLike]) -> bool:
    position = {r.urn: i for i, r in enumerate(ordered)}
    return all(
        position[before] < position[r.urn]
        for r in ordered
        for before in (*r.dependencies, r.parent)
        if before in position
    )


@pytest.mark.parametrize(
    ("registrations", "want"),
    [
        pytest.param([reg("b"), reg("a")], ["a", "b"], id="independent resources go by name"),
        pytest.param(
            [reg("a", dependencies=("urn:z",)), reg("z")],
            ["z", "a"],
            id="a dependency comes first whatever its name",
        ),
        pytest.param(
            [
                reg("z-crd", "kubernetes:apiextensions.k8s.io/v1:CRD"),
                reg("ns", "kubernetes:core/v1:NS"),
            ],
            ["z-crd", "ns"],
            id="independent resources go by type before name",
        ),
        pytest.param(
            [reg("child", parent="urn:system"), reg("system", "jobset-infra:index:X")],
            ["system", "child"],
            id="a parent comes before its children",
        ),
        pytest.param(
            [reg("a", dependencies=("urn:elsewhere",))],
            ["a"],
            id="a dependency outside the run is ignored",
        ),
        pytest.param(
            [reg("a", dependencies=("urn:b",)), reg("b", dependencies=("urn:a",))],
            ["a", "b"],
            id="a cycle loses nothing",
        ),
    ],
)
def test_order(registrations: list[Reg], want: list[str]) -> None:
    assert names(apply_order(registrations)) == want


@given(st.data())
def test_the_multislice_plan_has_one_order_whatever_the_engine_did(data: st.DataObject) -> None:
    recorded = list(run_stack("v5e-multislice").registrations)
    shuffled = data.draw(st.permutations(recorded))
    ordered = apply_order(shuffled)
    assert names(ordered) == names(apply_order(recorded))
    assert placed_after_what_they_wait_for(ordered)
    kinds = [r.type.rsplit(":", 1)[-1] for r in ordered if r.type.startswith("kubernetes:")]
    assert kinds.index("CustomResourceDefinition") < kinds.index("Deployment")
    assert kinds.index("Deployment") < kinds.index("JobSet")
    assert kinds.index("Release") < kinds.index("ClusterQueue") < kinds.index("LocalQueue")
