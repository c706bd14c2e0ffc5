#!/usr/bin/env python3
"""Build the pinned Go tools (the real control plane, kwok, Pulumi, upstream peers) into a cache.

Each folder under tools/ is a small wrapper Go module of ours whose go.mod pins one group of
upstream modules by version (and go.sum their hashes). The Go module proxy is the only source:
`go build` fetches the pinned module zips and compiles the binaries named in GROUPS. Output goes
to `<cache>/tools/<group>-<key>/bin`, where the key hashes everything the result depends on
(go.mod, go.sum, our own Go sources in the folder, the build flags, the Go version), so a warm
machine rebuilds nothing and a changed pin rebuilds only its group. `<cache>/tools/bin` then holds
a link to every binary of the groups built; `jobset_infra.cluster.binaries` looks there first.

    python3 tools/build.py                 # every group
    python3 tools/build.py kube kwok       # only these
    python3 tools/build.py --print-bin     # the bin folder, for PATH=...

Standard library only: it runs before any venv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
# Kubernetes stamps its version into two packages; clients read it from /version.
_KUBE_VERSION_PKGS = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")


@dataclass(frozen=True)
class Binary:
    """One binary: its output name, the Go package that is its main, and its -X flags.

    `stamps` maps a Go variable to a template over the pinned versions of the group's go.mod:
    `{k8s.io/kubernetes}` is the version that go.mod requires of that module.
    """

    name: str
    package: str
    stamps: tuple[tuple[str, str], ...] = ()
    tags: str = ""
    gcflags: str = ""  # -gcflags, e.g. "pattern=-l"


@dataclass(frozen=True)
class ModuleFile:
    """A file of a pinned module (at the version the group's go.mod requires), copied into bin."""

    module: str
    path: str  # inside the module
    name: str  # in bin


@dataclass(frozen=True)
class Group:
    name: str
    binaries: tuple[Binary, ...]
    env: tuple[tuple[str, str], ...] = ()
    # Copied into bin: a file of the group's folder (by name) or of a pinned module.
    extra_files: tuple[str | ModuleFile, ...] = field(default=())


def _kube_stamps() -> tuple[tuple[str, str], ...]:
    stamps: list[tuple[str, str]] = []
    for pkg in _KUBE_VERSION_PKGS:
        stamps += [
            (f"{pkg}.gitVersion", "{k8s.io/kubernetes}"),
            (f"{pkg}.gitMajor", "{k8s.io/kubernetes:major}"),
            (f"{pkg}.gitMinor", "{k8s.io/kubernetes:minor}"),
            (f"{pkg}.gitTreeState", "clean"),
            (f"{pkg}.buildDate", "1970-01-01T00:00:00Z"),
        ]
    return tuple(stamps)


_K8S = "k8s.io/kubernetes/cmd/"
_PULUMI_VERSION = ("github.com/pulumi/pulumi/sdk/v3/go/common/version.Version",
                   "{github.com/pulumi/pulumi/pkg/v3}")
# The provider module is pinned at the commit tagged v4.25.0 (the proxy serves only that
# pseudo-version); the provider reports the release it is.
_PULUMI_K8S_VERSION = ("github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version",
                       "4.25.0")
# The provider links the module's generated Go SDK (66 packages, about 30 MB of Go) for its
# helm.v4.Chart and yaml/v2 components; those packages were 683 of the 1,165 CPU-seconds of a
# cold provider build here. Without inlining they compile in 0.7 of the time (core/v1: 35 -> 25 s)
# and nothing hot runs through them; the rest of the provider stays fully optimised.
_NO_INLINING_IN_GENERATED_SDK = "github.com/pulumi/pulumi-kubernetes/sdk/v4/...=-l"
_CONTAINERD = "github.com/containerd/containerd/v2/"
_CONTAINERD_STAMPS = (("github.com/containerd/containerd/v2/version.Version",
                       "{github.com/containerd/containerd/v2}"),)
# Snapshotters and exporters the nodes never use (overlayfs is theirs); btrfs needs cgo anyway.
_CONTAINERD_TAGS = "no_btrfs,no_devmapper,no_zfs,no_tracing"
GROUPS: tuple[Group, ...] = (
    Group("kube", (
        Binary("etcd", "go.etcd.io/etcd/server/v3"),
        Binary("kube-apiserver", _K8S + "kube-apiserver", _kube_stamps()),
        Binary("kube-controller-manager", _K8S + "kube-controller-manager", _kube_stamps()),
        Binary("kube-scheduler", _K8S + "kube-scheduler", _kube_stamps()),
    )),
    Group("kwok", (Binary("kwok", "sigs.k8s.io/kwok/cmd/kwok"),)),
    Group("kueue", (Binary("kueue", "sigs.k8s.io/kueue/cmd/kueue", (
        ("sigs.k8s.io/kueue/pkg/version.GitVersion", "{sigs.k8s.io/kueue}"),
    )),)),
    Group("jobset", (Binary("jobset-manager", "sigs.k8s.io/jobset", (
        ("sigs.k8s.io/jobset/pkg/version.GitVersion", "{sigs.k8s.io/jobset}"),
    )),)),
    # Upstream JobSet's Go side as parity peers (tests): our Go client built from its API module,
    # and its in-place restart agent. A group of its own so the jobset group's key is unchanged.
    Group("jobset-parity", (
        Binary("jobset-goclient", "./cmd/jobset-goclient"),
        Binary("in-place-restart-agent", "sigs.k8s.io/jobset/cmd/in-place-restart-agent"),
    )),
    # The CLI and our Python language host (which also runs Python plugins, our component
    # package) in one group: one go.mod pins the sdk/v3 whose LanguageRuntime service they share.
    Group("pulumi", (
        Binary("pulumi", "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi", (_PULUMI_VERSION,),
               tags="osusergo,grpcnotrace"),
        Binary("pulumi-language-python", "./cmd/pulumi-language-python",
               (("main.Version", "{github.com/pulumi/pulumi/sdk/v3}"),)),
    ), extra_files=(
        ModuleFile("github.com/pulumi/pulumi/sdk/v3", "python/cmd/pulumi-language-python-exec",
                   "pulumi-language-python-exec"),
    )),
    # Its own module: the provider compiles only against the pulumi/pkg its go.mod pins.
    Group("pulumi-kubernetes", (
        Binary("pulumi-resource-kubernetes", "./cmd/pulumi-resource-kubernetes",
               (_PULUMI_K8S_VERSION,), gcflags=_NO_INLINING_IN_GENERATED_SDK),
    ), extra_files=(
        ModuleFile("github.com/pulumi/pulumi-kubernetes/provider/v4",
                   "cmd/pulumi-resource-kubernetes/schema.json",
                   "pulumi-resource-kubernetes.schema.json"),
    )),
    # Its own group, so adding it changed no other group's key: the engine runs YAML programs
    # with it (the YAML consumer of our component package, tests/package).
    Group("pulumi-yaml", (
        Binary("pulumi-language-yaml", "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml",
               (("github.com/pulumi/pulumi-yaml/pkg/version.Version",
                 "{github.com/pulumi/pulumi-yaml}"),)),
    )),
    # The pod sandbox's process (tools/pause/cmd/pause): the pause image holds only it. A group of
    # its own, so the groups above keep their keys and warm caches.
    Group("pause", (Binary("pause", "./cmd/pause"),)),
    # The real nodes of `cluster up --real-nodes` (docs/cluster.md "Real nodes"), in groups of
    # their own so the groups above keep their keys. `node`'s go.mod is tools/kube's module graph
    # (same pins, same replaces): what kubelet and kube-proxy share with the control plane comes
    # out of the Go build cache that the kube group filled.
    Group("node", (
        Binary("kubelet", _K8S + "kubelet", _kube_stamps()),
        Binary("kube-proxy", _K8S + "kube-proxy", _kube_stamps()),
    )),
    Group("containerd", (
        Binary("containerd", _CONTAINERD + "cmd/containerd", _CONTAINERD_STAMPS,
               tags=_CONTAINERD_TAGS),
        Binary("containerd-shim-runc-v2", _CONTAINERD + "cmd/containerd-shim-runc-v2",
               _CONTAINERD_STAMPS, tags=_CONTAINERD_TAGS),
        Binary("ctr", _CONTAINERD + "cmd/ctr", _CONTAINERD_STAMPS, tags=_CONTAINERD_TAGS),
    )),
    Group("cni", tuple(
        Binary(name, f"github.com/containernetworking/plugins/plugins/{kind}/{name}", ((
            "github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion",
            "{github.com/containernetworking/plugins}"),))
        for kind, name in (("main", "bridge"), ("ipam", "host-local"), ("main", "loopback"))
    )),
    Group("coredns", (Binary("coredns", "./cmd/coredns", (
        ("github.com/coredns/coredns/coremain.GitCommit", "{github.com/coredns/coredns}"),
    )),)),
)


# --- pins ------------------------------------------------------------------------------------

_REQUIRE = re.compile(r"^\s*(?:require\s+)?([\w.\-/]+)\s+(v[\w.\-+]+)(?:\s*//.*)?$")


def pinned_versions(go_mod: Path) -> dict[str, str]:
    """Module path -> version for every require line of `go_mod` (direct or indirect)."""
    versions: dict[str, str] = {}
    in_replace = False
    for line in go_mod.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("replace"):
            in_replace = stripped.endswith("(")
            continue
        if in_replace:
            in_replace = stripped != ")"
            continue
        match = _REQUIRE.match(line)
        if match and "=>" not in line:
            versions[match.group(1)] = match.group(2)
    return versions


def _expand(template: str, versions: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        module, _, part = match.group(1).partition(":")
        version = versions[module]
        major, minor = version.lstrip("v").split(".")[:2]
        return {"": version, "major": major, "minor": minor}[part]

    return re.sub(r"\{([^}]+)\}", one, template)


def ldflags(binary: Binary, versions: dict[str, str]) -> str:
    stamps = [f"-X {var}={_expand(value, versions)}" for var, value in binary.stamps]
    return " ".join(["-s", "-w", *stamps])


# --- cache -----------------------------------------------------------------------------------


def cache_root() -> Path:
    explicit = os.environ.get("JOBSET_INFRA_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jobset-infra"


def go_version() -> str:
    out = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def group_key(group: Group, go: str) -> str:
    """A hash of everything the group's binaries are built from."""
    digest = hashlib.sha256(go.encode())
    folder = TOOLS / group.name
    for path in sorted(_sources(folder)):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    versions = pinned_versions(folder / "go.mod")
    for binary in group.binaries:
        digest.update(f"{binary.name} {binary.package} {binary.tags}".encode())
        if binary.gcflags:  # only then: the keys of the groups built without stay as they were
            digest.update(f" {binary.gcflags}".encode())
        digest.update(ldflags(binary, versions).encode())
    digest.update(repr(group.env).encode())
    if group.extra_files:
        digest.update(repr(group.extra_files).encode())
    return digest.hexdigest()[:16]


def _sources(folder: Path) -> Iterator[Path]:
    for path in folder.rglob("*"):
        if path.is_file() and (path.name in ("go.mod", "go.sum") or path.suffix == ".go"
                               or path.name in _extra_names()):
            yield path


def _extra_names() -> set[str]:
    return {e for group in GROUPS for e in group.extra_files if isinstance(e, str)}


# --- build -----------------------------------------------------------------------------------


def _say(message: str) -> None:
    print(f"[tools] {message}", flush=True)


def build_group(group: Group, root: Path, go: str) -> Path:
    """Build `group` into its keyed folder unless it is already complete; return its bin dir."""
    key = group_key(group, go)
    out = root / "tools" / f"{group.name}-{key}"
    done = out / "build.json"
    if done.exists():
        _say(f"{group.name}: cached ({out})")
        return out / "bin"
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "bin").mkdir(parents=True)
    folder = TOOLS / group.name
    versions = pinned_versions(folder / "go.mod")
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false",
           **dict(group.env)}
    timings: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for index, binary in enumerate(group.binaries, 1):
        _say(f"{group.name}: building {binary.name} ({index}/{len(group.binaries)}) "
             f"from {binary.package}")
        started = time.monotonic()
        command = ["go", "build", "-trimpath", "-pgo=off", "-ldflags", ldflags(binary, versions),
                   "-o", str(staging / "bin" / binary.name)]
        if binary.tags:
            command += ["-tags", binary.tags]
        if binary.gcflags:
            command += [f"-gcflags={binary.gcflags}"]
        log = staging / f"go-build-{binary.name}.log"
        status, cpu[binary.name] = _run_go([*command, binary.package], folder, env, log)
        if status != 0:
            sys.stdout.write(log.read_text())
            raise SystemExit(f"[tools] {group.name}: go build of {binary.package} failed "
                             f"(exit {status}); its output is above")
        timings[binary.name] = round(time.monotonic() - started, 1)
        _say(f"{group.name}: {binary.name} built in {timings[binary.name]:.0f} s "
             f"({cpu[binary.name]:.0f} CPU-seconds{_downloads(log)})")
    for extra in group.extra_files:
        _copy_extra(extra, folder, staging / "bin", env)
    record = {"group": group.name, "key": key, "go": go, "seconds": timings,
              "cpu_seconds": cpu,
              "modules": {m: v for m, v in versions.items() if _is_pinned_root(m, group)}}
    (staging / "build.json").write_text(json.dumps(record, indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return out / "bin"


def _run_go(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[int, float]:
    """Run one go command with its output in `log`; its exit status and the CPU-seconds it and
    the compilers and linker it waited for used (wait4's usage of the child)."""
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=sink,
                                   stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, round(usage.ru_utime + usage.ru_stime, 1)


def _downloads(log: Path) -> str:
    count = sum(1 for line in log.read_text(errors="replace").splitlines()
                if line.startswith("go: downloading "))
    return f", {count} modules downloaded" if count else ""


def _copy_extra(extra: str | ModuleFile, folder: Path, bin_dir: Path,
                env: dict[str, str]) -> None:
    if isinstance(extra, str):
        shutil.copy2(folder / extra, bin_dir / Path(extra).name)
        return
    # `go mod download -json M` in the group's module answers for the version go.mod requires.
    out = subprocess.run(["go", "mod", "download", "-json", extra.module], cwd=folder, env=env,
                         capture_output=True, text=True, check=False)
    source = Path(json.loads(out.stdout or "{}").get("Dir", "")) / extra.path
    if out.returncode != 0 or not source.is_file():
        raise SystemExit(f"[tools] {extra.module} has no {extra.path} (go mod download: "
                         f"{out.stderr.strip() or out.stdout.strip()})")
    target = bin_dir / extra.name
    shutil.copyfile(source, target)  # the module cache is read-only; the copy need not be
    target.chmod(0o755 if os.access(source, os.X_OK) or not source.suffix else 0o644)


def _is_pinned_root(module: str, group: Group) -> bool:
    return any(b.package == module or b.package.startswith(module + "/") for b in group.binaries)


def link_bin(root: Path, bins: Sequence[Path]) -> Path:
    """Point `<cache>/tools/bin/<name>` at each built binary; return that folder."""
    target = root / "tools" / "bin"
    target.mkdir(parents=True, exist_ok=True)
    for folder in bins:
        for binary in folder.iterdir():
            link = target / binary.name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(binary)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    names = [g.name for g in GROUPS]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", metavar="GROUP",
                        help=f"groups to build (default: all of {', '.join(names)})")
    parser.add_argument("--print-bin", action="store_true",
                        help="print the folder the binaries are linked into, and build nothing")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.groups) - set(names))
    if unknown:
        parser.error(f"unknown group {unknown[0]!r}; choose from {', '.join(names)}")
    root = cache_root()
    if args.print_bin:
        print(root / "tools" / "bin")
        return 0
    if shutil.which("go") is None:
        raise SystemExit("[tools] the go command is not on PATH; install Go 1.26 or newer")
    go = go_version()
    chosen = [g for g in GROUPS if not args.groups or g.name in args.groups]
    started = time.monotonic()
    # One group at a time, in GROUPS' order: a group reuses from the Go build cache what an
    # earlier one compiled of a module version they share (`node` nearly all of `kube`). Two at
    # a time (e2dd4f9) compiled those shared packages twice: the cold build of every group took
    # 3,571 s and 6,573 CPU-seconds on the otherwise idle machine, against 3,333 s one at a time
    # on 2026-12-07 under a load of 10-22 from other suites.
    bins = [build_group(group, root, go) for group in chosen]
    target = link_bin(root, bins)
    _say(f"done in {time.monotonic() - started:.0f} s; binaries in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
