"""Build an image of `spec.IMAGES` into the cache, once per set of inputs.

An image's key hashes everything its bytes come from: the builder's version, its spec, the
Debian base (suite, sources, packages), the lock file, the project's files and the binaries it
copies. `<cache>/images/<name>-<key>/` then holds the OCI layout (`oci/`), the same as one archive
(`image.tar`, what `ctr images import` reads) and `build.json` (digest, seconds, packages); a
second build with the same key returns it at once. An image is up to three layers, each cached
by its own inputs: the Debian base (once per base spec, shared by the images on it; its .deb
files are kept), the venv of the lock's wheels (once per lock), and the project or files. A
change to our sources rebuilds only the last. `rebuild=True` redoes every step but the
downloads (`jobset-infra image build --rebuild`); with `reuse_lower=True` it redoes only what a
source change redoes (what the test suite's reproducibility test runs).

Builds of one image (or one base) take a file lock: two test workers, or two engineers, wait for
each other instead of building twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from jobset_infra.cluster.binaries import cache_root, find
from jobset_infra.cluster.images import debian, oci, python_app
from jobset_infra.cluster.images.spec import (
    PYTHON,
    SOURCE_DATE_EPOCH,
    VENV,
    DebianBase,
    ImageSpec,
    PythonApp,
)

LAYER_VERSION: Final = "2"
"""Bump when the builder writes a layer's bytes differently for the same inputs (2: no RECORD
line of pip's own scripts, whose hashes held the building interpreter's path)."""
IMAGE_VERSION: Final = "2"
"""Bump when it writes an image's config, manifest or index differently (2: the index names
the manifest by digest too)."""
Progress = Callable[[str], None]
REPO: Final = Path(__file__).resolve().parents[3]
"""The repository the lock files and project files are read from (this checkout)."""


@dataclass(frozen=True)
class Built:
    spec: ImageSpec
    digest: str  # of the manifest: what a Pod's image references
    folder: Path
    seconds: float
    cached: bool

    @property
    def layout(self) -> Path:
        return self.folder / "oci"

    @property
    def archive(self) -> Path:
        return self.folder / "image.tar"

    @property
    def by_digest(self) -> str:
        """`repository@sha256:...`: the reference a Deployment pins."""
        return f"{self.spec.repository}@{self.digest}"


def images_root() -> Path:
    return cache_root() / "images"


# --- keys -------------------------------------------------------------------------------------


def base_key(base: DebianBase) -> str:
    return _hash(LAYER_VERSION, repr(base))


def canonical(spec: ImageSpec) -> str:
    """The spec as text that is the same in every process (a frozenset's repr is not: its
    order follows string hashing, which is seeded per process)."""
    def plain(value: object) -> object:
        if isinstance(value, frozenset | set):
            return sorted(str(v) for v in value)
        return value

    return json.dumps(dataclasses.asdict(spec, dict_factory=lambda items: {
        k: plain(v) for k, v in items}), sort_keys=True)


def image_key(spec: ImageSpec, repo: Path = REPO) -> str:
    digest = hashlib.sha256(f"{LAYER_VERSION}.{IMAGE_VERSION}\n{canonical(spec)}\n".encode())
    if spec.base is not None:
        digest.update(base_key(spec.base).encode())
    if spec.app is not None:
        digest.update((repo / spec.app.lock).read_bytes())
        for rel in spec.app.project_files:
            _hash_tree(digest, repo, rel)
    for source, _ in spec.files:
        path = _source(source, repo)
        digest.update(f"{source}\n".encode())
        digest.update(oci.sha256_file(path).encode())
    return digest.hexdigest()[:16]


def _hash(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _hash_tree(digest: hashlib._Hash, repo: Path, rel: str) -> None:
    top = repo / rel
    paths = [top] if top.is_file() else sorted(
        p for p in top.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p))
    for path in paths:
        digest.update(f"{path.relative_to(repo)}\n".encode())
        digest.update(path.read_bytes())


def _source(source: str, repo: Path) -> Path:
    tool = source.removeprefix("tool:")
    return find(tool) if tool != source else repo / source


# --- the build ----------------------------------------------------------------------------------


def build_images(names: Iterable[str], progress: Progress = lambda _line: None,
                 ) -> dict[str, Built]:
    """The images of `names` (each once, built now unless cached); ImageBuildError names an
    unknown one."""
    from jobset_infra.cluster.images.spec import IMAGES

    wanted = list(dict.fromkeys(names))
    unknown = [n for n in wanted if n not in IMAGES]
    if unknown:
        raise debian.ImageBuildError(f"no image {unknown[0]!r}: choose from "
                                     f"{', '.join(IMAGES)}")
    return {name: build_image(IMAGES[name], progress=lambda line: progress(f"image {line}"))
            for name in wanted}


def build_image(spec: ImageSpec, *, rebuild: bool = False, reuse_lower: bool = False,
                repo: Path = REPO, progress: Progress = lambda _line: None) -> Built:
    """The image of `spec` from the cache, or built now (always when `rebuild`). With
    `reuse_lower`, a rebuild takes the Debian base and the lock's venv layers from their caches
    (each keyed by its own inputs) and redoes the rest: the project's layer, the files, config,
    manifest, index and archive (what every source change rebuilds)."""
    key = image_key(spec, repo)
    root = images_root()
    folder = root / f"{spec.name}-{key}"
    with _locked(root / f"{spec.name}.lock"):
        if not rebuild and (folder / "build.json").exists():
            os.utime(folder / "build.json")  # used now: `_prune` keeps the recently used
            return _load(spec, folder)
        debian.require_root()
        progress(f"{spec.name}: building {spec.reference} ({spec.description})")
        started = time.monotonic()
        staging = folder.with_name(folder.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        previous = os.umask(0o022)
        try:
            record = _build(spec, staging, rebuild and not reuse_lower, repo, progress)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            os.umask(previous)
        seconds = round(time.monotonic() - started, 1)
        (staging / "build.json").write_text(json.dumps(
            {**record, "key": key, "seconds": seconds}, indent=2, sort_keys=True) + "\n")
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
        _prune(root, spec.name)
        progress(f"{spec.name}: {spec.repository}@{record['digest']} in {seconds:.0f} s")
        return Built(spec, str(record["digest"]), folder, seconds, cached=False)


def _build(spec: ImageSpec, staging: Path, rebuild: bool, repo: Path,
           progress: Progress) -> dict[str, object]:
    layers: list[oci.Layer] = []
    history: list[str] = []
    packages: list[str] = []
    app_root = staging / "app-root"
    app_root.mkdir()
    base_root: Path | None = None
    if spec.base is not None:
        base_layer, base_root, packages = _base(spec.base, rebuild, progress)
        layers.append(base_layer)
        history.append(f"Debian {spec.base.suite}: {', '.join(spec.base.packages)} and their "
                       f"dependencies ({len(packages)} packages), extracted")
    if spec.app is not None:
        if base_root is None or spec.base is None:
            raise debian.ImageBuildError(f"{spec.name}: a Python app needs a Debian base")
        layers.append(_locked_layer(spec.app, spec.base, base_root, rebuild=rebuild, repo=repo,
                                    progress=progress))
        history.append(f"venv {VENV}: {spec.app.lock} (hash-checked wheels)")
        if spec.app.project_files:
            progress(f"{spec.name}: the project's wheel into {VENV}")
            python_app.install_project(spec.app, repo, app_root, staging / "pip")
            with _locked(base_root.with_suffix(".lock")):
                python_app.compile_venv(base_root, app_root)
            history.append(f"venv {VENV}: the project ({', '.join(spec.app.project_files)})")
    for source, target in spec.files:
        path = app_root / target.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_source(source, repo), path)
        path.chmod(0o755 if os.access(_source(source, repo), os.X_OK) else 0o644)
        history.append(f"file: {target}")
    python_app.normalise_modes(app_root)
    if any(app_root.iterdir()):
        layers.append(oci.write_layer(app_root, staging / "app.tar.gz", SOURCE_DATE_EPOCH))
    config = oci.Config(user=spec.user, env=spec.env, entrypoint=spec.entrypoint, cmd=spec.cmd,
                        workdir=spec.workdir, exposed_ports=spec.exposed_ports,
                        labels=dict(spec.labels))
    manifest = oci.write_layout(
        staging / "oci", oci.image_config(config, layers, SOURCE_DATE_EPOCH, history), layers,
        spec.reference, {"org.opencontainers.image.created": oci.iso_time(SOURCE_DATE_EPOCH),
                         "org.opencontainers.image.title": spec.name,
                         "org.opencontainers.image.version": spec.tag,
                         "org.opencontainers.image.description": spec.description})
    oci.write_archive(staging / "oci", staging / "image.tar", SOURCE_DATE_EPOCH)
    shutil.rmtree(app_root)
    shutil.rmtree(staging / "pip", ignore_errors=True)
    for layer in layers:
        if layer.path.parent == staging:
            layer.path.unlink()
    return {"name": spec.name, "reference": spec.reference, "digest": manifest.digest,
            "layers": [layer.blob.digest for layer in layers], "packages": packages}


def _base(base: DebianBase, rebuild: bool, progress: Progress,
          ) -> tuple[oci.Layer, Path, list[str]]:
    """The base layer, its extracted root (for chroot compiles) and the .deb files' names."""
    root = images_root()
    key = base_key(base)
    folder = root / f"base-{base.suite}-{key}"
    with _locked(root / f"base-{key}.lock"):
        record_path = folder / "layer.json"
        debs = debian.download(base, root / f"debs-{key}", root / f"mmdebstrap-{key}")
        names = [deb.name for deb in debs]
        if not rebuild and record_path.exists():
            return _layer_from(folder, json.loads(record_path.read_text())), folder / "root", \
                names
        progress(f"base: extracting {len(debs)} Debian packages, compiling the standard library")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        debian.extract(debs, folder / "root")
        debian.finish(folder / "root", PYTHON)
        layer = oci.write_layer(folder / "root", folder / "layer.tar.gz", SOURCE_DATE_EPOCH)
        _write_layer_record(record_path, layer, debs=names)
        return layer, folder / "root", names


def locked_key(app: PythonApp, base: DebianBase, repo: Path = REPO) -> str:
    return _hash(LAYER_VERSION, base_key(base), repr(sorted(app.exclude)),
                 (repo / app.lock).read_text())


def _locked_layer(app: PythonApp, base: DebianBase, base_root: Path, *, rebuild: bool,
                  repo: Path, progress: Progress) -> oci.Layer:
    """The venv of the lock's wheels, compiled: one layer per lock (and base), shared by every
    build of the image whose lock did not change."""
    key = locked_key(app, base, repo)
    folder = images_root() / f"venv-{Path(app.lock).stem}-{key}"
    with _locked(folder.with_suffix(".lock")):
        record_path = folder / "layer.json"
        if not rebuild and record_path.exists():
            return _layer_from(folder, json.loads(record_path.read_text()))
        progress(f"venv: pip install -r {app.lock} (hash-checked) for {PYTHON}")
        shutil.rmtree(folder, ignore_errors=True)
        root = folder / "root"
        root.mkdir(parents=True)
        python_app.install_locked(app, repo, root, folder / "pip")
        with _locked(base_root.with_suffix(".lock")):
            python_app.compile_venv(base_root, root)
        layer = oci.write_layer(root, folder / "layer.tar.gz", SOURCE_DATE_EPOCH)
        _write_layer_record(record_path, layer)
        shutil.rmtree(root)
        shutil.rmtree(folder / "pip", ignore_errors=True)
        return layer


def _write_layer_record(path: Path, layer: oci.Layer, **extra: object) -> None:
    path.write_text(json.dumps({"digest": layer.blob.digest, "size": layer.blob.size,
                                "diff_id": layer.diff_id, **extra}, indent=2) + "\n")


def _layer_from(folder: Path, record: dict[str, object]) -> oci.Layer:
    blob = oci.Blob(str(record["digest"]), int(str(record["size"])), oci.LAYER_TYPE)
    return oci.Layer(blob, str(record["diff_id"]), folder / "layer.tar.gz")


KEEP: Final = 4
"""Builds of one image kept in the cache (the most recently used): worktrees on other commits
of the same machine keep theirs, and the cache does not grow with every source change."""


def _prune(root: Path, name: str) -> None:
    builds = sorted((f for f in root.glob(f"{name}-*") if (f / "build.json").exists()),
                    key=lambda f: (f / "build.json").stat().st_mtime, reverse=True)
    for stale in builds[KEEP:]:
        shutil.rmtree(stale, ignore_errors=True)


def _load(spec: ImageSpec, folder: Path) -> Built:
    record = json.loads((folder / "build.json").read_text())
    return Built(spec, record["digest"], folder, float(record["seconds"]), cached=True)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
