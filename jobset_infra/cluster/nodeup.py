"""Start a cluster's real nodes once its control plane serves (`cluster up --real-nodes N`).

For each node: its containerd root seeded from the template that holds the images
(`nodeimages`: imported once per set of images, hard-linked into each node), containerd
(moved into the node's cgroup, so its shims and containers are found again at teardown), then
the kubelet. Then
the one kube-proxy and the one CoreDNS of the cluster's network namespace, and a wait until
every real Node is Ready.
The images come from `jobset-infra image build` (cached by their inputs): the pause image that
every pod's sandbox runs, and those asked for. They are imported with containerd's own `ctr
images import` rather than served by a local registry: nothing then listens, no pull policy
matters, and the archive's index names the image by tag and by digest, so a Pod that pins
`repository@sha256:...` finds it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from jobset_infra.cluster import nodeconfig, nodehost, nodeimages, realnode
from jobset_infra.cluster.binaries import MissingBinaryError, find
from jobset_infra.cluster.layout import Layout, ProcessSpec, kubeconfig
from jobset_infra.cluster.processes import Started, start, wait_healthy

Progress = Callable[[str], None]
Register = Callable[[Started], None]
SANDBOX_IMAGE = "pause"


def node_binaries(env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Every binary real nodes run, or one error naming all that are missing."""
    found: dict[str, Path] = {}
    missing = []
    for name in realnode.NODE_BINARIES:
        try:
            found[name] = find(name, env)
        except MissingBinaryError:
            missing.append(name)
    if missing:
        raise MissingBinaryError(
            f"{', '.join(missing)} not found: run `make tools` (the node, containerd, cni and "
            "coredns groups: kubelet, kube-proxy, containerd, the CNI plugins and CoreDNS from "
            "the Go module proxy)")
    return found


def write_files(layout: Layout, real: realnode.RealNodes, bins: Mapping[str, Path],
                sandbox_image: str) -> None:
    for node in real.nodes:
        node.cni_conf_dir.mkdir(parents=True, exist_ok=True)
        (node.cni_conf_dir / "10-jobset-infra.conflist").write_text(
            _json(nodeconfig.cni_config(node)))
        node.containerd_config.write_text(nodeconfig.containerd_config(
            node, bins["bridge"].resolve().parent, sandbox_image))
        node.kubelet_config.write_text(yaml.safe_dump(nodeconfig.kubelet_config(layout, node)))
        node.kubeconfig.write_text(yaml.safe_dump(kubeconfig(layout, node.identity)))
    for who in (realnode.PROXY_IDENTITY, realnode.COREDNS_IDENTITY):
        path = layout.component_kubeconfig(who)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(kubeconfig(layout, who)))
    (layout.folder / "kube-proxy.yaml").write_text(
        yaml.safe_dump(nodeconfig.kube_proxy_config(layout, real)))
    (layout.folder / "Corefile").write_text(nodeconfig.corefile(
        real, layout.component_kubeconfig(realnode.COREDNS_IDENTITY)))


def _json(value: Any) -> str:
    import json

    return json.dumps(value, indent=2) + "\n"


def start_nodes(layout: Layout, real: realnode.RealNodes, archives: Mapping[str, Path], *,
                sandbox_image: str, register: Register, progress: Progress, timeout: float,
                bins: Mapping[str, Path] | None = None) -> None:
    """Seed every node's containerd root with the images (`archives`: manifest digest -> OCI
    archive) from their template, start each containerd, then the kubelets, then kube-proxy and
    CoreDNS; `register` records each started process (for `down` and for errors)."""
    bins = bins or node_binaries()
    specs = {s.name: s for s in nodeconfig.process_specs(layout, real, bins)}
    with nodeimages.template_root(archives, bins, sandbox_image) as (template, built):
        if built is not None:
            progress(f"imported {len(archives)} images into a template containerd root in "
                     f"{built:.1f} s (once per set of images: {template.parent.name})")
        began = time.monotonic()
        for node in real.nodes:
            nodeimages.seed_root(template, node.folder / "containerd")
    progress(f"seeded {len(real.nodes)} node(s) with {len(archives)} images in "
             f"{time.monotonic() - began:.1f} s")
    for node in real.nodes:
        progress(f"starting containerd of {node.name} ({node.bridge}, {node.subnet})")
        containerd = _start(specs[f"containerd-{node.index}"], layout, register)
        nodehost.join_cgroup(containerd, node)
        nodehost.wait_containerd(node, bins["ctr"], containerd, timeout)
    for node in real.nodes:
        progress(f"starting kubelet of {node.name}")
        _start_healthy(specs[f"kubelet-{node.index}"], layout, register, timeout)
    progress("starting kube-proxy (nftables) and CoreDNS (cluster.local on "
             f"{', '.join(n.gateway for n in real.nodes)})")
    _start_healthy(specs["kube-proxy"], layout, register, timeout)
    _start_healthy(specs["coredns"], layout, register, timeout)


def _start(spec: ProcessSpec, layout: Layout, register: Register) -> Started:
    started = start(spec, layout.log(spec.name))
    register(started)
    return started


def _start_healthy(spec: ProcessSpec, layout: Layout, register: Register,
                   timeout: float) -> None:
    wait_healthy(_start(spec, layout, register), spec.health_url, None, timeout)
