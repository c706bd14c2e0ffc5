"""The node-pool spec strings of `--nodes` and of the local stack: `v5e-2x4:4,cpu:3`.

One grammar for every place that describes pools in a line of text: `jobset-infra sim --nodes`,
`jobset-infra cluster up --nodes` (kwok Nodes), and the local stack's `jobset-infra:nodes`, which
names the pools `cluster up` made so the stack plans the same pools (placement domains, Kueue
flavors and quota) without creating any. Entries are comma-separated:

- `v5e-2x4:4`: 4 TPU v5e 2x4 slice pools, planned by `plan_slice_pools` as GKE would get them
  (pool names `v5e-2x4-0..3`). Without a machine type the multi-host form is used (the fewest
  chips per VM the topology allows: 2 x ct5lp-hightpu-4t for 2x4), as Multislice needs;
- `v5e-2x4@ct5lp-hightpu-8t:2`: the same with an explicit machine type (here single-host);
- `v5e=v5e-2x4@ct5lp-hightpu-4t:4`: pools named `v5e-0..3`, as a stack whose `slices.name` is
  `v5e` names them (so a kwok cluster can stand in for that stack's GKE pools);
- `v5e-2x4:4+1`: the same 4 slice pools and 1 hot-spare pool (`v5e-2x4-spare-0`, labelled
  `jobset-infra/spare-pool: "true"`, outside Kueue's quota), as `slices.spares` plans it;
- `cpu:3`: the CPU pool (`default-pool`) with 3 nodes.

Pure: `parse_pools_text(text)` returns the entries or raises PoolsTextError naming the entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from jobset_infra.tpu.catalog import TpuShapeError, resolve_accelerator
from jobset_infra.tpu.pools import SlicePoolsPlan, plan_slice_pools
from jobset_infra.tpu.slice import TpuSlice
from jobset_infra.tpu.spec import SlicePoolsError, SlicePoolsSpec

__all__ = [
    "HELP",
    "POOLS_REGION",
    "POOLS_ZONE",
    "CpuPoolEntry",
    "PoolsEntry",
    "PoolsTextError",
    "TpuPoolsEntry",
    "parse_pools_text",
    "tpu_plans",
]

# Where pools described by text pretend to live: a zone that offers v5e (gke-tpu.md §2.5).
POOLS_ZONE: Final = "us-west4-a"
POOLS_REGION: Final = "us-west4"
HELP: Final = (
    "write pools as [<name>=]<accelerator>-<topology>[@<machine type>]:<slices>[+<spares>] "
    "(e.g. v5e-2x4:4 or v5e-2x4:4+1) or cpu:<nodes>, separated by commas"
)


class PoolsTextError(ValueError):
    """A pool spec string that cannot be planned; the message names the entry and the fix."""


@dataclass(frozen=True)
class TpuPoolsEntry:
    """`slices` TPU slice pools of one shape, planned as GKE node pools."""

    entry: str
    slice: TpuSlice
    plan: SlicePoolsPlan


@dataclass(frozen=True)
class CpuPoolEntry:
    """The untainted CPU pool for ordinary pods."""

    entry: str
    nodes: int


PoolsEntry = TpuPoolsEntry | CpuPoolEntry


def parse_pools_text(text: str) -> tuple[PoolsEntry, ...]:
    """Parse `text` (e.g. "v5e-2x4:4,cpu:3") into entries; raise PoolsTextError."""
    entries = tuple(_entry(e.strip()) for e in text.split(",") if e.strip())
    names = [_pool_group(e) for e in entries]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PoolsTextError(
            f"{text!r}: pool {twice[0]!r} is listed twice; give each shape once with the total "
            "count, e.g. v5e-2x4:6 instead of v5e-2x4:4,v5e-2x4:2"
        )
    return entries


def tpu_plans(entries: tuple[PoolsEntry, ...]) -> list[SlicePoolsPlan]:
    """The slice-pool plans among `entries`, in order."""
    return [e.plan for e in entries if isinstance(e, TpuPoolsEntry)]


def _pool_group(entry: PoolsEntry) -> str:
    return entry.plan.name if isinstance(entry, TpuPoolsEntry) else "default-pool"


def _entry(entry: str) -> PoolsEntry:
    shape, sep, count_text = entry.rpartition(":")
    count_text, plus, spares_text = count_text.partition("+")
    if not sep or not shape or not count_text.isdigit() or int(count_text) < 1:
        raise PoolsTextError(f"entry {entry!r} needs a positive count after ':'; {HELP}")
    if plus and (shape == "cpu" or not spares_text.isdigit()):
        raise PoolsTextError(
            f"entry {entry!r}: '+<spares>' takes a count of TPU spare pools; {HELP}")
    count = int(count_text)
    if shape == "cpu":
        return CpuPoolEntry(entry, count)
    name, eq, form = shape.rpartition("=")
    if eq and not name:
        raise PoolsTextError(f"entry {entry!r} has an empty name before '='; {HELP}")
    return _tpu_entry(entry, form, name or None, count, int(spares_text or 0))


def _tpu_entry(
    entry: str, shape: str, name: str | None, slices: int, spares: int = 0
) -> TpuPoolsEntry:
    form, _, machine_type = shape.partition("@")
    accelerator, dash, topology = form.rpartition("-")
    if not dash or not accelerator or not topology:
        raise PoolsTextError(f"entry {entry!r} has no '<accelerator>-<topology>'; {HELP}")
    try:
        tpu_slice = TpuSlice(accelerator, topology, machine_type or _multi_host(accelerator,
                                                                                 topology))
        plan = plan_slice_pools(SlicePoolsSpec(
            name=name or f"{tpu_slice.family.generation.lower()}-{topology}",
            accelerator=tpu_slice.family.label, topology=topology, zone=POOLS_ZONE,
            cluster_location=POOLS_REGION, machine_type=tpu_slice.vm_type, slices=slices,
            spares=spares, multislice=tpu_slice.is_multi_host,
        ))
    except (TpuShapeError, SlicePoolsError) as err:
        raise PoolsTextError(f"entry {entry!r}: {err}") from None
    return TpuPoolsEntry(entry, tpu_slice, plan)


def _multi_host(accelerator: str, topology: str) -> str | None:
    """The machine type with the fewest chips the topology allows; None lets TpuSlice explain."""
    try:
        family = resolve_accelerator(accelerator)
    except TpuShapeError:
        return None
    allowed = family.topologies.get(topology)
    return family.machine_type_for(min(allowed)) if allowed else None
