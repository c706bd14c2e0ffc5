"""The machine side of real nodes: checks, bridges, cgroups, image import and teardown.

Everything here changes the machine, and only what one cluster's run creates: its network
namespace `jsi-<key>` with the veth pair to the machine and, inside it, the bridges `jsi<i>`
with their gateway address (and IPv4 forwarding on those bridges only); one cgroup per node in
each cgroup v1 hierarchy, the folder under /run/jobset-infra, and what kubelet, containerd and
kube-proxy make beneath those (pod network namespaces, mounts, kube-proxy's nftables table, in
the cluster's namespace). `teardown` removes all of it.
`prepare` first writes the cluster's `Record` into its /run folder, so that what a killed
cluster left is found again (`records`, and `local.sweep_stale`, which `up` and `down` run).
Needs root.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from jobset_infra.cluster.processes import ComponentError, Started
from jobset_infra.cluster.realnode import (
    NETNS_LINK,
    RUNC,
    RUNTIME_ROOT,
    Node,
    RealNodeError,
    RealNodes,
    choose_slot,
)
from jobset_infra.cluster.stale import Record

CGROUP_ROOT: Final = Path("/sys/fs/cgroup")
CTR_NAMESPACE: Final = "k8s.io"  # the CRI's containerd namespace
# What kubelet sets at start, whatever its configuration says (protectKernelDefaults only turns
# a difference into a refusal to start): kept before and put back by `teardown`.
KERNEL_TUNABLES: Final = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
                          "kernel/panic_on_oops", "kernel/keys/root_maxkeys",
                          "kernel/keys/root_maxbytes")
SYSCTL: Final = Path("/proc/sys")
RECORD_FILE: Final = "record.json"
SLOT_FILE: Final = "slot"
# Machine-wide, as the tunables are: the values before the first of the clusters running at once
# changed them, put back when the last of them goes.
SAVED_SYSCTLS: Final = RUNTIME_ROOT / "sysctls.json"
LOCK_FILE: Final = RUNTIME_ROOT / ".lock"


def preflight(real: RealNodes) -> None:
    """RealNodeError naming the fix for whatever real nodes cannot start without."""
    if os.geteuid() != 0:
        raise RealNodeError("real nodes need root (bridges, cgroups, mounts): run as root, "
                            "or leave out --real-nodes")
    missing = [f"{tool} (Debian package {pkg})" for tool, pkg in
               ((RUNC, "runc"), ("nft", "nftables"), ("ip", "iproute2"), ("mount", "mount"))
               if shutil.which(tool) is None]
    if missing:
        raise RealNodeError(f"real nodes need {', '.join(missing)}: apt-get install -y runc "
                            "nftables (as .ci/run does)")
    if not hierarchies():
        raise RealNodeError(f"no cgroup v1 hierarchy under {CGROUP_ROOT}: real nodes are set "
                            "up for this machine's cgroup v1 (see docs/cluster.md)")


@contextlib.contextmanager
def machine_lock() -> Iterator[None]:
    """Held while a cluster takes its slot or the machine-wide tunables change hands: two
    clusters starting or stopping at once (two test workers) see each other's."""
    RUNTIME_ROOT.mkdir(parents=True, exist_ok=True)
    with LOCK_FILE.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def claim_slot(real: RealNodes) -> RealNodes:
    """`real` with the lowest free /30 of the links' range, reserved in its /run folder (so a
    cluster starting meanwhile skips it; `teardown` frees it) beside its record, this process
    its owner (so a sweep frees it should this process die before `prepare`)."""
    with machine_lock():
        reserved = set()
        for path in RUNTIME_ROOT.glob(f"*/{SLOT_FILE}"):
            if path.parent != real.runtime:
                with contextlib.suppress(OSError, ValueError):
                    reserved.add(int(path.read_text()))
        claimed = dataclasses.replace(real, slot=choose_slot(host_networks(), reserved))
        real.runtime.mkdir(parents=True, exist_ok=True)
        (real.runtime / SLOT_FILE).write_text(f"{claimed.slot}\n")
        write_record(claimed, owner=os.getpid())
        return claimed


def host_networks() -> list[tuple[str, str]]:
    """Every IPv4 address and route of the machine as (network, where)."""
    found: list[tuple[str, str]] = []
    for link in _ip_json("-4", "addr"):
        for addr in link.get("addr_info") or []:
            found.append((f"{addr['local']}/{addr['prefixlen']}", f"address of {link['ifname']}"))
    for route in _ip_json("-4", "route", "show", "table", "all"):
        dst = route.get("dst", "")
        if dst and dst != "default" and route.get("type", "unicast") in ("unicast", "local"):
            found.append((dst, f"route via {route.get('dev', '?')}"))
    return found


def _ip_json(*args: str) -> list[dict[str, Any]]:
    out = subprocess.run(["ip", "-j", *args], capture_output=True, text=True, check=True)
    parsed: list[dict[str, Any]] = json.loads(out.stdout or "[]")
    return parsed


def hierarchies() -> list[Path]:
    """The cgroup v1 hierarchies of this machine (not the cgroup2 mount at `unified`)."""
    if not CGROUP_ROOT.is_dir():
        return []
    return sorted(p for p in CGROUP_ROOT.iterdir()
                  if p.is_dir() and p.name != "unified" and (p / "cgroup.procs").exists())


def prepare(real: RealNodes) -> None:
    """The cluster's record (this process its owner); its network namespace, linked to the
    machine by a veth pair (the slot's /30), and in it the bridges, each with its gateway
    address; each node's cgroup; the kernel tunables kubelet will change, kept for
    `teardown`."""
    real.runtime.mkdir(parents=True, exist_ok=True)
    write_record(real, owner=os.getpid())
    with machine_lock():
        if not SAVED_SYSCTLS.exists():
            SAVED_SYSCTLS.write_text(json.dumps({
                name: (SYSCTL / name).read_text().strip()
                for name in KERNEL_TUNABLES if (SYSCTL / name).exists()}))
    ns, prefix = real.netns, real.link.prefixlen
    _run("ip", "netns", "add", ns)
    _run("ip", "-n", ns, "link", "set", "lo", "up")
    _run("ip", "link", "add", real.host_link, "type", "veth", "peer", "name", NETNS_LINK,
         "netns", ns)
    _run("ip", "addr", "add", f"{real.host_address}/{prefix}", "dev", real.host_link)
    _run("ip", "link", "set", real.host_link, "up")
    _run("ip", "-n", ns, "addr", "add", f"{real.address}/{prefix}", "dev", NETNS_LINK)
    _run("ip", "-n", ns, "link", "set", NETNS_LINK, "up")
    for node in real.nodes:
        node.folder.mkdir(parents=True, exist_ok=True)
        node.runtime.mkdir(parents=True, exist_ok=True)
        _run("ip", "-n", ns, "link", "add", node.bridge, "type", "bridge")
        _run("ip", "-n", ns, "addr", "add", f"{node.gateway}/{node.subnet.prefixlen}", "dev",
             node.bridge)
        _run("ip", "-n", ns, "link", "set", node.bridge, "up")
        # Routed in the namespace, on these bridges only (its ip_forward stays 0): a pod's
        # packet to a Service address that kube-proxy turns into another pod's, and a pod's
        # packet to another node's pod.
        _run("ip", "netns", "exec", ns, "sh", "-c",
             f"echo 1 > /proc/sys/net/ipv4/conf/{node.bridge}/forwarding")
        for hierarchy in hierarchies():
            folder = hierarchy / node.cgroup.lstrip("/")
            folder.mkdir(exist_ok=True)
            if hierarchy.name == "cpuset":  # a v1 cpuset starts empty: nothing could run
                for name in ("cpuset.cpus", "cpuset.mems"):
                    (folder / name).write_text((hierarchy / name).read_text())


def write_record(real: RealNodes, owner: int | None) -> None:
    """Record the cluster in its /run folder; `owner` None: no process owns it any more (`cluster
    up` returned and left it to `cluster down`)."""
    started = process_start(owner) if owner is not None else None
    record = Record(real.folder, len(real.nodes),
                    (owner, started) if owner is not None and started is not None else None)
    path = real.runtime / RECORD_FILE
    path.write_text(json.dumps(record.to_json()) + "\n")


def records() -> list[Record]:
    """Every real-node cluster recorded on this machine (living or not)."""
    found = []
    for path in sorted(RUNTIME_ROOT.glob(f"*/{RECORD_FILE}")):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, IndexError):
            found.append(Record.from_json(json.loads(path.read_text())))
    return found


def process_start(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot), None if it does not run: with the PID,
    names one process for good."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])  # field 22 of proc(5); fields[0] is field 3


def owner_alive(record: Record) -> bool | None:
    """Whether the record's owner still runs (None: it has no owner)."""
    if record.owner is None:
        return None
    pid, started = record.owner
    return process_start(pid) == started


def join_cgroup(started: Started, node: Node) -> None:
    """Move a node's process (containerd: its shims then start beside it) into the node's
    cgroup, so `teardown` finds every process the node left."""
    for hierarchy in hierarchies():
        with contextlib.suppress(OSError):
            (hierarchy / node.cgroup.lstrip("/") / "cgroup.procs").write_text(str(started.pid))


def wait_containerd(node: Node, ctr: Path, started: Started, timeout: float) -> None:
    from jobset_infra.cluster.processes import alive, log_tail

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(started):
            raise ComponentError(f"{started.name} exited during start-up; last lines of "
                                 f"{started.log}:\n{log_tail(started.log)}")
        probe = subprocess.run([str(ctr), "--address", str(node.socket), "version"],
                               capture_output=True, text=True, check=False)
        if probe.returncode == 0:
            return
        time.sleep(0.2)
    raise ComponentError(f"{started.name} did not answer on {node.socket} within {timeout:g} s;"
                         f" see {started.log}")


def import_images(node: Node, ctr: Path, archives: Sequence[Path]) -> None:
    """Load OCI archives into the node's image store, unpacked for the CRI's snapshotter."""
    for archive in archives:
        # A rebuild of the same image (same key: `image build --rebuild`, the image tier's
        # reproducibility test) swaps its folder in place; wait out that moment.
        deadline = time.monotonic() + 30
        while not archive.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        result = subprocess.run(
            [str(ctr), "--address", str(node.socket), "--namespace", CTR_NAMESPACE, "images",
             "import", "--snapshotter", "overlayfs", str(archive)],
            capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise ComponentError(f"ctr images import {archive} into {node.name} failed: "
                                 f"{(result.stderr or result.stdout).strip()[-600:]}")


def teardown(real: RealNodes, grace: float = 10.0) -> None:
    """Remove everything the nodes made: processes left in their cgroups (container shims and
    containers), mounts under their folders, cgroups, bridges, kube-proxy's table, /run folder.
    Safe to call twice and on a half-started cluster."""
    cgroups = [h / n.cgroup.lstrip("/") for n in real.nodes for h in hierarchies()]
    deadline = time.monotonic() + grace
    while True:
        pids = cgroup_pids(cgroups)
        if not pids or time.monotonic() > deadline:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    unmount_under([n.folder for n in real.nodes] + [real.runtime])
    for cgroup in cgroups:
        _remove_cgroup(cgroup)
    # The namespace takes its bridges, the veth pair (both ends) and kube-proxy's tables.
    subprocess.run(["ip", "netns", "del", real.netns], capture_output=True, check=False)
    subprocess.run(["ip", "link", "del", real.host_link], capture_output=True, check=False)
    with machine_lock():
        shutil.rmtree(real.runtime, ignore_errors=True)
        if not list(RUNTIME_ROOT.glob(f"*/{RECORD_FILE}")):  # the last real-node cluster
            _restore_sysctls(SAVED_SYSCTLS)


def _restore_sysctls(saved: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        for name, value in json.loads(saved.read_text()).items():
            with contextlib.suppress(OSError):
                (SYSCTL / name).write_text(str(value))
    saved.unlink(missing_ok=True)


def cgroup_pids(cgroups: Iterable[Path]) -> set[int]:
    """Every process in `cgroups` and beneath them."""
    found: set[int] = set()
    for cgroup in cgroups:
        if not cgroup.is_dir():
            continue
        for procs in cgroup.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                found |= {int(line) for line in procs.read_text().split()}
    return found


def unmount_under(folders: Sequence[Path]) -> None:
    roots = [str(f.resolve()) for f in folders]
    points: list[str] = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if any(point == r or point.startswith(r + "/") for r in roots):
                points.append(point)
    for point in sorted(set(points), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def _remove_cgroup(cgroup: Path) -> None:
    if not cgroup.is_dir():
        return
    for child in sorted((p for p in cgroup.rglob("*") if p.is_dir()),
                        key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            child.rmdir()
    with contextlib.suppress(OSError):
        cgroup.rmdir()


def _run(*argv: str) -> None:
    result = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RealNodeError(f"{' '.join(argv)} failed: {result.stderr.strip()}")
