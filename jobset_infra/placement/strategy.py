"""Which placement strategy a Job gets (pure): a closed choice, dispatched through tables.

* DOMAINS: the controller assigns a free domain through a nodeSelector (ours, no webhook).
* AFFINITY: pod affinity + anti-affinity on the Job's pod template, as upstream v0.2 did; used
  when asked for, or automatically when the controller can neither list Nodes nor has declared
  domains (it then cannot know which domains exist).
* NODE_SELECTOR: upstream's `alpha.jobset.sigs.k8s.io/node-selector` strategy: an administrator
  labelled one node pool per Job; construction adds the namespaced-job selector and toleration.
* NONE: no exclusive placement (no annotation, or the controller's mode is off).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import PlacementMode

__all__ = ["Strategy", "strategy_for"]


class Strategy(StrEnum):
    """How one child Job is kept alone in its topology domain."""

    DOMAINS = "domains"
    AFFINITY = "affinity"
    NODE_SELECTOR = "node-selector"
    NONE = "none"


_BY_MODE: Mapping[PlacementMode, Strategy | None] = {
    PlacementMode.AUTO: None,  # decided by whether domains are known
    PlacementMode.EXCLUSIVE: Strategy.DOMAINS,
    PlacementMode.AFFINITY: Strategy.AFFINITY,
    PlacementMode.OFF: Strategy.NONE,
}


def strategy_for(
    annotations: Mapping[str, str], mode: PlacementMode | str, domains_known: bool
) -> Strategy:
    """Return the strategy for a Job with these (Job-level) annotations.

    `domains_known` is False when the controller may not list Nodes and declares no domains.
    Raises ValueError naming the allowed modes for an unknown mode.
    """
    if c.EXCLUSIVE_KEY not in annotations:
        return Strategy.NONE
    if c.NODE_SELECTOR_STRATEGY_KEY in annotations:
        return Strategy.NODE_SELECTOR
    try:
        chosen = _BY_MODE[PlacementMode(mode)]
    except ValueError:
        allowed = ", ".join(m.value for m in PlacementMode)
        raise ValueError(f"placement.mode: unknown mode {mode!r}; use one of {allowed}") from None
    if chosen is not None:
        return chosen
    return Strategy.DOMAINS if domains_known else Strategy.AFFINITY
