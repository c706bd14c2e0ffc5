"""The images a real node starts with: imported once into a template containerd root, then
hard-linked into each node's root.

`ctr images import` unpacks an image's layers into containerd's overlayfs snapshots: for the
controller image alone that is thousands of files, and the real-node tier's fixture spent most
of its start there, every node of every cluster again. So `template_root(images)` imports a set
of images once, into a root of its own under the cache (keyed by the images' digests and the
containerd binary), with a containerd of its own that is stopped before the root is used; and
`seed_root` gives each node a copy of it made of hard links (its directories made anew with
their owner, mode and extended attributes, such as overlayfs's opaque marker; the metadata
databases copied, as containerd writes them in place). Committed snapshots are only ever lower
folders of a container's overlay, and blobs are never rewritten, so the nodes may share their
inodes. An overlay of the template instead of the links cannot work: the snapshotter keeps each
container's upper folder under its root, and the kernel refuses an overlayfs as an upperdir.
Needs root (as real nodes do).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import ipaddress
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from jobset_infra.cluster import nodehost
from jobset_infra.cluster.binaries import cache_root
from jobset_infra.cluster.layout import ProcessSpec
from jobset_infra.cluster.nodeconfig import containerd_config
from jobset_infra.cluster.processes import start, stop
from jobset_infra.cluster.realnode import RUNTIME_ROOT, Node

FORMAT: Final = "1"  # bump when what a template holds changes
KEEP: Final = 4  # templates kept (most recently used): a controller-only set, one with Kueue, ...
DATABASES: Final = ("meta.db", "metadata.db")  # bolt files containerd writes in place


def templates_root() -> Path:
    return cache_root() / "node-templates"


def template_key(digests: Sequence[str], containerd: Path) -> str:
    """The template for these images (manifest digests, any order) and this containerd."""
    text = "\n".join([FORMAT, str(containerd.resolve()), *sorted(digests)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@contextlib.contextmanager
def template_root(archives: Mapping[str, Path], bins: Mapping[str, Path], sandbox_image: str,
                  ) -> Iterator[tuple[Path, float | None]]:
    """The template root holding `archives` (manifest digest -> OCI archive), built now if no
    other run has, with the seconds the build took (None: it was there). Held (a shared lock)
    until the block ends, so no prune removes it while nodes are seeded from it."""
    key = template_key(list(archives), bins["containerd"])
    folder = templates_root() / key
    root = folder / "root"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f"{key}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker building the same one: wait for it
        built = None
        if not root.is_dir():
            began = time.monotonic()
            _build(folder, list(archives.values()), bins, sandbox_image)
            built = time.monotonic() - began
            _prune(keep=key)
        os.utime(folder)  # used now: the prune keeps the most recently used
        fcntl.flock(lock, fcntl.LOCK_SH)
        yield root, built


def _prune(keep: str) -> None:
    """Remove all but the KEEP most recently used templates (each source change of an image
    makes a new one); one in use by another run (its lock held) stays."""
    folders = sorted((f for f in templates_root().iterdir() if f.is_dir() and f.name != keep
                      and "." not in f.name), key=lambda f: f.stat().st_mtime, reverse=True)
    for folder in folders[KEEP - 1:]:
        with (folder.parent / f"{folder.name}.lock").open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
            shutil.rmtree(folder, ignore_errors=True)


def _build(folder: Path, archives: Sequence[Path], bins: Mapping[str, Path],
           sandbox_image: str) -> None:
    staging = folder.with_name(f"{folder.name}.building-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    runtime = RUNTIME_ROOT / f"template-{os.getpid()}"  # a socket's path must be short
    node = Node(0, "template", ipaddress.IPv4Network("198.18.0.0/20"), staging, runtime, 0, 0)
    staging.mkdir(parents=True)
    runtime.mkdir(parents=True, exist_ok=True)
    node.containerd_config.write_text(containerd_config(
        node, bins["bridge"].resolve().parent, sandbox_image))
    spec = ProcessSpec("containerd-template", (str(bins["containerd"]),
                                               f"--config={node.containerd_config}"), "")
    started = start(spec, staging / "containerd.log")
    try:
        nodehost.wait_containerd(node, bins["ctr"], started, 120)
        nodehost.import_images(node, bins["ctr"], archives)
    finally:
        stop([started])  # its databases closed before anyone copies them
        nodehost.unmount_under([staging, runtime])
        shutil.rmtree(runtime, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    (staging / "containerd").rename(folder / "root")
    shutil.rmtree(staging, ignore_errors=True)


def seed_root(template: Path, root: Path) -> int:
    """Make `root` a copy of `template` whose files are hard links to the template's (the
    databases copied); returns how many entries it made."""
    made = 0
    for here, dirs, files in os.walk(template):
        source = Path(here)
        target = root / source.relative_to(template)
        target.mkdir(exist_ok=True)
        _copy_meta(source, target)
        made += 1
        for name in files:
            _link(source / name, target / name)
            made += 1
        for name in list(dirs):
            if (source / name).is_symlink():  # os.walk lists them as folders but not into them
                _link(source / name, target / name)
                dirs.remove(name)
    return made


def _link(source: Path, target: Path) -> None:
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
        os.lchown(target, *_owner(source))
    elif source.name in DATABASES:
        shutil.copy2(source, target)
    else:
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError as err:
            if err.errno != errno.EXDEV:
                raise
            shutil.copy2(source, target, follow_symlinks=False)  # another file system: a copy


def _owner(path: Path) -> tuple[int, int]:
    st = path.lstat()
    return st.st_uid, st.st_gid


def _copy_meta(source: Path, target: Path) -> None:
    """A directory's owner, mode and extended attributes (overlayfs's opaque marker lives in
    `trusted.overlay.opaque` on the layers' directories)."""
    st = source.lstat()
    os.chown(target, st.st_uid, st.st_gid)
    os.chmod(target, st.st_mode & 0o7777)
    with contextlib.suppress(OSError):
        for name in os.listxattr(source):
            os.setxattr(target, name, os.getxattr(source, name))
