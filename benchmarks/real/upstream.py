"""Upstream JobSet's manager as a benchmark peer: its files from the Go module cache, its flags.

Nothing of upstream is copied into this repository. At run time:

- the module version is the one `tools/jobset/go.mod` pins (the manager `tools/build.py jobset`
  built from it), and `go mod download -json` names the module's folder in the Go module cache;
- its CRD is `config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml` of that folder (the
  kustomize patches there add a conversion webhook for a second version that does not exist,
  so they are left out);
- its webhook registrations are `config/components/webhook/manifests.yaml` with the JSON-patch
  `replace` operations its kustomization lists (the Pod webhooks' objectSelector), and every
  `clientConfig.service` turned into a loopback `url` plus the benchmark CA as `caBundle`;
- the manager runs out of cluster with a `Configuration` file of ours: webhook server on
  127.0.0.1 with the benchmark's serving pair, no internal cert rotation, no leader election.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

MODULE: Final = "sigs.k8s.io/jobset"
REPO: Final = Path(__file__).resolve().parents[2]
PIN_FILE: Final = REPO / "tools" / "jobset" / "go.mod"
CRD_FILE: Final = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
WEBHOOK_DIR: Final = "config/components/webhook"
NAME_PREFIX: Final = "jobset-bench-upstream-"
BINARY: Final = "jobset-manager"

JsonObj = dict[str, Any]


class UpstreamError(RuntimeError):
    """Upstream's files or binary are missing; the message says which and how to get them."""


def pinned_version(go_mod: Path = PIN_FILE) -> str:
    """The sigs.k8s.io/jobset version the tools group pins."""
    match = re.search(rf"^\s*{re.escape(MODULE)}\s+(v\S+)", go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise UpstreamError(f"{go_mod} does not require {MODULE}; see tools/build.py")
    return match.group(1)


def module_dir(version: str) -> Path:
    """The module's folder in the Go module cache (downloaded from the proxy if absent)."""
    go = shutil.which("go")
    if go is None:
        raise UpstreamError("`go` is not on PATH: it locates upstream's CRD and webhook "
                            f"configuration in the module cache ({MODULE}@{version})")
    out = subprocess.run([go, "mod", "download", "-json", f"{MODULE}@{version}"],
                         capture_output=True, text=True, timeout=300, check=False)
    try:
        folder = Path(json.loads(out.stdout)["Dir"])
    except (ValueError, KeyError) as err:
        raise UpstreamError(f"go mod download {MODULE}@{version} failed: "
                            f"{(out.stderr or out.stdout).strip()[:400]}") from err
    if not (folder / CRD_FILE).is_file():
        raise UpstreamError(f"{folder} has no {CRD_FILE}")
    return folder


def crd(folder: Path) -> JsonObj:
    loaded: JsonObj = yaml.safe_load((folder / CRD_FILE).read_text())
    return loaded


def _json_pointer(path: str) -> list[str | int]:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]
    return [int(p) if p.isdigit() else p for p in parts]


def apply_replace(document: JsonObj, operations: Iterable[Mapping[str, Any]]) -> JsonObj:
    """A JSON patch (RFC 6902) of `replace` operations, the only kind upstream's webhook
    kustomization uses; anything else is an error rather than a silent skip."""
    out = copy.deepcopy(document)
    for op in operations:
        if op.get("op") != "replace":
            raise UpstreamError(f"unsupported JSON-patch op {op.get('op')!r} in upstream's "
                                "webhook kustomization (only replace is implemented)")
        *parents, last = _json_pointer(str(op["path"]))
        target: Any = out
        for part in parents:
            target = target[part]
        target[last] = copy.deepcopy(op["value"])
    return out


def _patches(folder: Path) -> list[tuple[Mapping[str, Any], list[JsonObj]]]:
    kustomization = yaml.safe_load((folder / WEBHOOK_DIR / "kustomization.yaml").read_text())
    found = []
    for patch in kustomization.get("patches") or []:
        ops = yaml.safe_load((folder / WEBHOOK_DIR / patch["path"]).read_text())
        found.append((patch.get("target") or {}, ops))
    return found


def webhook_configurations(folder: Path, port: int, ca_pem: bytes) -> list[JsonObj]:
    """Upstream's Mutating/ValidatingWebhookConfiguration, pointed at https://127.0.0.1:port."""
    text = (folder / WEBHOOK_DIR / "manifests.yaml").read_text()
    documents = [d for d in yaml.safe_load_all(text) if d]
    patches = _patches(folder)
    bundle = base64.b64encode(ca_pem).decode()
    out = []
    for loaded in documents:
        document = loaded
        for target, ops in patches:
            if (target.get("kind"), target.get("name")) == (
                    document["kind"], document["metadata"]["name"]):
                document = apply_replace(document, ops)
        for hook in document["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}",
                                    "caBundle": bundle}
        document["metadata"] = {"name": NAME_PREFIX + document["metadata"]["name"]}
        out.append(document)
    return out


def manager_config(webhook_port: int, cert_dir: Path, metrics: str, health: str) -> JsonObj:
    """The manager's Configuration (config.jobset.x-k8s.io/v1alpha1) for an out-of-cluster run;
    QPS and burst come as flags."""
    return {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "metrics": {"bindAddress": metrics, "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": health},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
    }


def command(binary: Path, config: Path, kubeconfig: Path, qps: float, burst: int) -> list[str]:
    return [str(binary), f"--config={config}", f"--kubeconfig={kubeconfig}",
            f"--kube-api-qps={qps:g}", f"--kube-api-burst={burst}", "--zap-log-level=error",
            "--zap-devel=false"]


def build_info(binary: Path) -> str:
    """`go version -m`'s line for the module (the version the binary was really built from)."""
    go = shutil.which("go")
    if go is None:
        return "unknown (no go on PATH)"
    out = subprocess.run([go, "version", "-m", str(binary)], capture_output=True, text=True,
                         timeout=30, check=False).stdout
    toolchain = out.splitlines()[0].split(":", 1)[-1].strip() if out else "?"
    for line in out.splitlines():
        fields = line.split()
        if fields[:2] == ["mod", MODULE]:
            return f"{MODULE} {fields[2]} ({toolchain})"
    return f"unknown ({toolchain})"
