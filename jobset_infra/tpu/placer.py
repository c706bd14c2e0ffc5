"""Who places each TPU slice inside one node pool: our controller, or Kueue's TAS.

A multi-host TPU slice is one GKE node pool, so every child Job (one slice) must have all its
pods in one pool, and no two slices may share one. Two mechanisms can guarantee that:

- `Placer.CONTROLLER` (ours, the default): the JobSet carries the exclusive-topology annotation on
  `cloud.google.com/gke-nodepool`; the controller gives each child Job a whole free pool through a
  nodeSelector, all or nothing (docs/placement.md);
- `Placer.KUEUE_TAS`: Kueue's Topology-Aware Scheduling. The Kueue component creates a Topology
  whose levels are the node labels GKE puts on TPU nodes (`TAS_LEVELS`: the node pool, then the
  host) and names it in the ResourceFlavors; the JobSet's TPU pod templates ask for slices of
  `hosts` pods, each inside one node pool. Kueue computes which hosts each pod gets at admission
  and ungates the pods onto them.

One placer per JobSet, and one per stack: a flavor with a Topology makes Kueue place every
workload of it (implicit TAS), which would fight the controller's own choice.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from jobset_infra.tpu import constants as c

__all__ = ["SLICE_DOMAIN_LABEL", "TAS_LEVELS", "Placer"]


class Placer(StrEnum):
    """Which mechanism puts each slice's pods into one node pool of their own."""

    CONTROLLER = "controller"
    KUEUE_TAS = "kueue-tas"


# One multi-host slice is one node pool (GKE), so the pool is the domain a slice must fit in.
SLICE_DOMAIN_LABEL: Final = c.GKE_NODEPOOL_LABEL
# Levels of the Kueue Topology, coarse to fine: GKE's node-pool label, then the node. Kueue
# allows kubernetes.io/hostname only as the last level; with it, TAS assigns each pod its node.
TAS_LEVELS: Final = (c.GKE_NODEPOOL_LABEL, c.HOSTNAME_LABEL)
