"""Topology domains: the values of a topology key, from Nodes and from configuration (pure).

A domain (for TPU: a node pool, key `cloud.google.com/gke-nodepool`) is what one exclusive child
Job gets to itself. Domains come from the Nodes carrying the key, merged with the pools declared in
the controller's configuration, so a pool scaled to zero (autoscaling 0-or-N, flex-start) is still
allocatable and the autoscaler scales up exactly the pool a Job was given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from jobset_infra.placement.nodes import SlimNode, Taint
from jobset_infra.placement.scheduling_terms import parse_resources

__all__ = ["DeclaredDomain", "Domain", "domain_sort_key", "domains_from_nodes"]


class DeclaredDomain(Protocol):
    """A domain named in the controller's configuration (ControllerConfig's declared pools).

    Optional attributes read with getattr: `allocatable` (per node, quantities) and `taints`
    (dicts or Taint-like objects with key/value/effect).
    """

    @property
    def name(self) -> str: ...

    @property
    def topology_key(self) -> str: ...

    @property
    def node_count(self) -> int: ...

    @property
    def labels(self) -> Mapping[str, str]: ...


@dataclass(frozen=True, slots=True)
class Domain:
    """One value of a topology key with the nodes behind it.

    `nodes` holds the observed Nodes plus, for a declared pool that has fewer Nodes than declared,
    placeholder nodes standing for the ones the autoscaler will create.
    """

    topology_key: str
    name: str
    nodes: tuple[SlimNode, ...]
    declared: bool = False

    @property
    def node_count(self) -> int:
        """Return the number of nodes (observed and expected) in the domain."""
        return len(self.nodes)

    @property
    def usable_nodes(self) -> tuple[SlimNode, ...]:
        """Return the nodes new pods can land on (Ready, not cordoned, or still to be created)."""
        return tuple(n for n in self.nodes if n.usable)

    @property
    def healthy(self) -> bool:
        """Return True when every node of the domain can take pods."""
        return all(n.usable for n in self.nodes)


def domain_sort_key(name: str) -> tuple[tuple[int, str], ...]:
    """Return a natural sort key, so `pool-2` comes before `pool-10` (deterministic choice)."""
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"(\d+)", name) if p)


def _taints_of(declared: DeclaredDomain) -> tuple[Taint, ...]:
    out = []
    for t in getattr(declared, "taints", None) or ():
        if isinstance(t, Mapping):
            out.append(Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect"))))
        else:
            out.append(Taint(str(t.key), str(t.value or ""), str(t.effect)))
    return tuple(out)


def _placeholders(declared: DeclaredDomain, count: int) -> tuple[SlimNode, ...]:
    raw = getattr(declared, "allocatable", None)
    allocatable = (
        parse_resources(raw, f"placement domain {declared.name}.allocatable") if raw else None
    )
    labels = {**dict(declared.labels), declared.topology_key: declared.name}
    taints = _taints_of(declared)
    return tuple(
        SlimNode(f"{declared.name}/expected-{i}", labels, taints, allocatable, placeholder=True)
        for i in range(count)
    )


def domains_from_nodes(
    nodes: Iterable[SlimNode] | None,
    topology_key: str,
    declared: Iterable[DeclaredDomain] = (),
) -> tuple[Domain, ...]:
    """Return the domains of `topology_key`, in natural name order.

    `nodes=None` means the controller may not list Nodes: only declared domains exist then.
    A declared pool with fewer Nodes than declared is padded with placeholder nodes.
    """
    by_name: dict[str, list[SlimNode]] = {}
    for node in nodes or ():
        value = node.labels.get(topology_key)
        if value:
            by_name.setdefault(value, []).append(node)
    declared_by_name = {d.name: d for d in declared if d.topology_key == topology_key}
    domains = []
    for name in sorted(set(by_name) | set(declared_by_name), key=domain_sort_key):
        observed = tuple(sorted(by_name.get(name, ()), key=lambda n: domain_sort_key(n.name)))
        decl = declared_by_name.get(name)
        missing = max(0, decl.node_count - len(observed)) if decl is not None else 0
        extra = _placeholders(decl, missing) if decl is not None else ()
        domains.append(Domain(topology_key, name, observed + extra, declared=decl is not None))
    return tuple(domains)
