"""Domains from Nodes merged with declared pools."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobset_infra.api.controller_config import PlacementDomain
from jobset_infra.placement import domains_from_nodes
from jobset_infra.placement.domains import domain_sort_key
from tests.placement.builders import POOL_KEY, TOPO_KEY, TPU, tpu_node, tpu_pools


@dataclass(frozen=True)
class Declared:
    name: str
    node_count: int
    topology_key: str = POOL_KEY
    labels: dict[str, str] = field(default_factory=dict)


def test_domains_group_nodes_by_topology_value_in_natural_order() -> None:
    nodes = tpu_pools(12, 2)
    domains = domains_from_nodes(nodes, POOL_KEY)
    assert [d.name for d in domains][:3] == ["pool-0", "pool-1", "pool-2"]
    assert domains[-1].name == "pool-11"
    assert all(d.node_count == 2 and d.healthy and not d.declared for d in domains)


def test_nodes_without_the_key_belong_to_no_domain() -> None:
    nodes = [*tpu_pools(1, 2), tpu_node("cpu-node", "x")]
    object.__setattr__(nodes[-1], "labels", {"kubernetes.io/hostname": "cpu-node"})
    assert [d.name for d in domains_from_nodes(nodes, POOL_KEY)] == ["pool-0"]


def test_declared_pool_with_zero_nodes_is_a_domain_of_placeholders() -> None:
    declared = [
        PlacementDomain(name="flex", node_count=4, labels={TOPO_KEY: "4x4"}, allocatable={TPU: "4"})
    ]
    (domain,) = domains_from_nodes([], POOL_KEY, declared)
    assert domain.declared
    assert domain.node_count == 4
    assert domain.nodes[0].labels == {TOPO_KEY: "4x4", POOL_KEY: "flex"}
    assert domain.nodes[0].allocatable == {TPU: 4000}


def test_declared_pool_is_padded_up_to_its_node_count_while_scaling() -> None:
    nodes = [tpu_node("a-0", "a")]
    (domain,) = domains_from_nodes(nodes, POOL_KEY, [Declared("a", 2)])
    assert [n.name for n in domain.nodes] == ["a-0", "a/expected-0"]
    assert domain.nodes[1].allocatable is None


def test_observed_nodes_beyond_the_declared_count_are_all_kept() -> None:
    (domain,) = domains_from_nodes(tpu_pools(1, 3), POOL_KEY, [Declared("pool-0", 2)])
    assert domain.node_count == 3


def test_without_node_access_only_declared_domains_exist() -> None:
    domains = domains_from_nodes(None, POOL_KEY, [Declared("b", 2), Declared("a", 2)])
    assert [d.name for d in domains] == ["a", "b"]


def test_declared_domains_of_another_topology_key_are_ignored() -> None:
    assert domains_from_nodes(None, POOL_KEY, [Declared("r1", 2, topology_key="rack")]) == ()


def test_unready_node_makes_a_domain_unhealthy() -> None:
    nodes = [tpu_node("a-0", "a"), tpu_node("a-1", "a", ready=False)]
    (domain,) = domains_from_nodes(nodes, POOL_KEY)
    assert not domain.healthy
    assert [n.name for n in domain.usable_nodes] == ["a-0"]


def test_natural_sort_key() -> None:
    names = ["pool-10", "pool-2", "pool-1", "a"]
    assert sorted(names, key=domain_sort_key) == ["a", "pool-1", "pool-2", "pool-10"]
