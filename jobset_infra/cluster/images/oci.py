"""Layers, image configs, manifests and OCI layouts, written the same byte for byte from the
same files (what makes an image's digest reproducible).

A layer is a tar of a folder's tree in sorted order, every entry's time set to one instant, no
user or group names, owners and modes kept; gzip without a name or time. Config, manifest and
index are JSON with sorted keys and no spaces. An archive is a tar of the layout, written the
same way, which `ctr images import` reads.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Final

LAYOUT_VERSION: Final = {"imageLayoutVersion": "1.0.0"}
MANIFEST_TYPE: Final = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE: Final = "application/vnd.oci.image.config.v1+json"
INDEX_TYPE: Final = "application/vnd.oci.image.index.v1+json"
LAYER_TYPE: Final = "application/vnd.oci.image.layer.v1.tar+gzip"
# containerd's import names the image by this annotation; the OCI one carries the tag.
CONTAINERD_NAME: Final = "io.containerd.image.name"
OCI_REF_NAME: Final = "org.opencontainers.image.ref.name"
# Level 1: a third of level 6's time for a few per cent more bytes; any fixed level is
# reproducible with the same zlib.
GZIP_LEVEL: Final = 1
_CHUNK: Final = 1 << 20


@dataclass(frozen=True)
class Blob:
    digest: str  # sha256:<hex>
    size: int
    media_type: str

    def descriptor(self, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest,
                               "size": self.size}
        if annotations:
            out["annotations"] = dict(annotations)
        return out


@dataclass(frozen=True)
class Layer:
    blob: Blob
    diff_id: str  # sha256 of the uncompressed tar
    path: Path  # the compressed file


@dataclass(frozen=True)
class Config:
    """What `docker inspect` shows of an image: how its process starts."""

    user: str
    env: Sequence[tuple[str, str]]
    entrypoint: Sequence[str]
    cmd: Sequence[str]
    workdir: str
    exposed_ports: Sequence[int]
    labels: Mapping[str, str]


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


# --- layers ----------------------------------------------------------------------------------


def walk(root: Path, skip: frozenset[str] = frozenset()) -> Iterator[tuple[Path, str]]:
    """(path, name in the layer) for every entry under `root`, parents before children, names
    sorted bytewise; `skip` names relative paths left out with all they hold."""
    def visit(folder: Path, prefix: str) -> Iterator[tuple[Path, str]]:
        for name in sorted(os.listdir(folder), key=os.fsencode):
            rel = f"{prefix}{name}"
            if rel in skip:
                continue
            path = folder / name
            yield path, rel
            if path.is_dir() and not path.is_symlink():
                yield from visit(path, rel + "/")

    yield from visit(root, "")


def write_layer(root: Path, target: Path, mtime: int, *,
                skip: frozenset[str] = frozenset()) -> Layer:
    """A gzip'd tar of the tree under `root` at `target`."""
    digest = _HashingWriter()
    with target.open("wb") as raw, _gzip(raw) as zipped:
        digest.sink = zipped
        with tarfile.open(fileobj=digest, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            links: dict[tuple[int, int], str] = {}
            for path, name in walk(root, skip):
                _add(tar, path, name, mtime, links)
    blob = Blob(sha256_file(target), target.stat().st_size, LAYER_TYPE)
    return Layer(blob, "sha256:" + digest.hash.hexdigest(), target)


class _HashingWriter(io.RawIOBase):
    """Passes bytes on to `sink` and hashes them on the way (the layer's diff_id)."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.sink: BinaryIO | gzip.GzipFile | None = None

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.hash.update(view)
        assert self.sink is not None
        self.sink.write(view)
        return len(view)


def _gzip(raw: BinaryIO) -> gzip.GzipFile:
    # No file name and time zero in the header: only the contents decide the bytes.
    return gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0)


def _add(tar: tarfile.TarFile, path: Path, name: str, mtime: int,
         links: dict[tuple[int, int], str]) -> None:
    st = path.lstat()
    info = tarfile.TarInfo(name)
    info.mode = stat.S_IMODE(st.st_mode)
    info.uid, info.gid = st.st_uid, st.st_gid
    info.uname = info.gname = ""
    info.mtime = mtime
    if stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    elif stat.S_ISLNK(st.st_mode):
        info.type = tarfile.SYMTYPE
        info.linkname = os.readlink(path)
        tar.addfile(info)
    elif stat.S_ISREG(st.st_mode):
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1 and key in links:  # the same file under a second name
            info.type = tarfile.LNKTYPE
            info.linkname = links[key]
            tar.addfile(info)
            return
        links[key] = name
        info.size = st.st_size
        with path.open("rb") as handle:
            tar.addfile(info, handle)
    # Devices, sockets and fifos stay out: the runtime makes /dev.


# --- config, manifest, layout ------------------------------------------------------------------


def iso_time(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def image_config(config: Config, layers: Sequence[Layer], created: int,
                 history: Sequence[str]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "User": config.user,
        "Env": [f"{k}={v}" for k, v in config.env],
        "WorkingDir": config.workdir,
    }
    if config.entrypoint:
        body["Entrypoint"] = list(config.entrypoint)
    if config.cmd:
        body["Cmd"] = list(config.cmd)
    if config.exposed_ports:
        body["ExposedPorts"] = {f"{port}/tcp": {} for port in config.exposed_ports}
    if config.labels:
        body["Labels"] = dict(config.labels)
    return {
        "architecture": "amd64",
        "os": "linux",
        "created": iso_time(created),
        "config": body,
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created": iso_time(created), "created_by": line} for line in history],
    }


def write_blob(layout: Path, data: bytes, media_type: str) -> Blob:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    path = blob_path(layout, digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return Blob(digest, len(data), media_type)


def blob_path(layout: Path, digest: str) -> Path:
    algorithm, _, hexdigest = digest.partition(":")
    return layout / "blobs" / algorithm / hexdigest


def write_layout(layout: Path, config: dict[str, Any], layers: Sequence[Layer], reference: str,
                 annotations: Mapping[str, str]) -> Blob:
    """An OCI image layout in the folder `layout` (made afresh); the manifest's blob."""
    shutil.rmtree(layout, ignore_errors=True)
    (layout / "blobs" / "sha256").mkdir(parents=True)
    (layout / "oci-layout").write_bytes(canonical_json(LAYOUT_VERSION))
    config_blob = write_blob(layout, canonical_json(config), CONFIG_TYPE)
    for layer in layers:
        _link_or_copy(layer.path, blob_path(layout, layer.blob.digest))
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": config_blob.descriptor(),
        "layers": [layer.blob.descriptor() for layer in layers],
        "annotations": dict(annotations),
    }
    manifest_blob = write_blob(layout, canonical_json(manifest), MANIFEST_TYPE)
    repository, tag = reference.rsplit(":", 1)
    # The same manifest twice: by tag, and by digest, so an import names the image both ways
    # and the kubelet finds `repository@sha256:...` (what a Deployment pins) without a pull.
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX_TYPE,
        "manifests": [
            manifest_blob.descriptor({CONTAINERD_NAME: reference, OCI_REF_NAME: tag}),
            manifest_blob.descriptor({CONTAINERD_NAME: f"{repository}@{manifest_blob.digest}"}),
        ],
    }
    (layout / "index.json").write_bytes(canonical_json(index))
    return manifest_blob


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copyfile(source, target)


def write_archive(layout: Path, target: Path, mtime: int) -> None:
    """The layout as one uncompressed tar (its blobs are compressed already)."""
    with tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as tar:
        links: dict[tuple[int, int], str] = {}
        for path, name in walk(layout):
            _add(tar, path, name, mtime, links)
