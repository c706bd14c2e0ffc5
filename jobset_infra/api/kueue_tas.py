"""Kueue's Topology-Aware Scheduling (TAS) strings, exactly as Kueue spells them.

TAS is beta and on by default since Kueue 0.14. A PodSet asks for it with annotations on its pod
template (apis/kueue/v1beta2/topology_types.go at v0.19.2): with the slice pair, each slice of
`podset-slice-size` pods lands inside one domain of the `podset-slice-required-topology` level.
The rest of Kueue's strings are in `constants.py`.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "PODSET_PREFERRED_TOPOLOGY",
    "PODSET_REQUIRED_TOPOLOGY",
    "PODSET_SLICE_REQUIRED_TOPOLOGY",
    "PODSET_SLICE_SIZE",
    "PODSET_SLICE_TOPOLOGY_CONSTRAINTS",
    "PODSET_UNCONSTRAINED_TOPOLOGY",
    "TAS_ANNOTATIONS",
    "TOPOLOGY_SCHEDULING_GATE",
]

PODSET_REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-required-topology"
PODSET_PREFERRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-preferred-topology"
PODSET_UNCONSTRAINED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-unconstrained-topology"
PODSET_SLICE_REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-slice-required-topology"
PODSET_SLICE_SIZE: Final = "kueue.x-k8s.io/podset-slice-size"
PODSET_SLICE_TOPOLOGY_CONSTRAINTS: Final = (
    "kueue.x-k8s.io/podset-slice-required-topology-constraints"
)
# Every pod-template annotation by which a PodSet asks Kueue for topology-aware placement.
TAS_ANNOTATIONS: Final = (
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_SIZE,
    PODSET_SLICE_TOPOLOGY_CONSTRAINTS,
)
# Scheduling gate Kueue puts on pods of a TAS workload until it assigns their nodes.
TOPOLOGY_SCHEDULING_GATE: Final = "kueue.x-k8s.io/topology"
