"""The daemonless image builder's pure parts: layers, layouts, keys, lock filtering, launchers
(cluster/images). The whole build, twice, is the real-node tier's (tests/realnode)."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from jobset_infra.cluster.images import oci, python_app
from jobset_infra.cluster.images.build import canonical, image_key
from jobset_infra.cluster.images.spec import (
    BUILD_TOOLS,
    CONTROLLER,
    IMAGES,
    KUEUE,
    NONROOT,
    PAUSE,
    SOURCE_DATE_EPOCH,
    WORKLOAD,
    ImageSpec,
)

ROOT = Path(__file__).resolve().parents[2]


def _tree(root: Path, mode_bits: int = 0o022) -> Path:
    previous = os.umask(mode_bits)
    try:
        (root / "b" / "deep").mkdir(parents=True)
        (root / "a.txt").write_text("a")
        (root / "b" / "deep" / "run.sh").write_text("#!/bin/sh\n")
        (root / "b" / "deep" / "run.sh").chmod(0o755)
        (root / "b" / "link").symlink_to("deep/run.sh")
        os.link(root / "a.txt", root / "b" / "same-as-a.txt")
    finally:
        os.umask(previous)
    return root


def _members(layer: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(layer, "r:gz") as tar:
        return tar.getmembers()


def test_a_layer_is_the_same_bytes_from_the_same_files_written_at_another_time(
        tmp_path: Path) -> None:
    first = _tree(tmp_path / "one")
    second = _tree(tmp_path / "two")
    os.utime(second / "a.txt", (1_000_000, 1_000_000))  # other times on disk
    one = oci.write_layer(first, tmp_path / "one.tar.gz", SOURCE_DATE_EPOCH)
    two = oci.write_layer(second, tmp_path / "two.tar.gz", SOURCE_DATE_EPOCH)
    assert one.blob.digest == two.blob.digest
    assert one.diff_id == two.diff_id
    assert (tmp_path / "one.tar.gz").read_bytes() == (tmp_path / "two.tar.gz").read_bytes()


def test_a_layer_keeps_modes_links_and_hard_links_and_drops_names_and_times(
        tmp_path: Path) -> None:
    layer = oci.write_layer(_tree(tmp_path / "t"), tmp_path / "l.tar.gz", SOURCE_DATE_EPOCH)
    members = {m.name: m for m in _members(layer.path)}
    assert list(members) == ["a.txt", "b", "b/deep", "b/deep/run.sh", "b/link",
                             "b/same-as-a.txt"]  # parents first, sorted
    assert members["b/deep/run.sh"].mode == 0o755
    assert members["b/link"].issym() and members["b/link"].linkname == "deep/run.sh"
    assert members["b/same-as-a.txt"].islnk() and members["b/same-as-a.txt"].linkname == "a.txt"
    assert {m.mtime for m in members.values()} == {SOURCE_DATE_EPOCH}
    assert {(m.uname, m.gname) for m in members.values()} == {("", "")}


def test_the_gzip_header_holds_no_name_and_no_time(tmp_path: Path) -> None:
    layer = oci.write_layer(_tree(tmp_path / "t"), tmp_path / "l.tar.gz", SOURCE_DATE_EPOCH)
    header = layer.path.read_bytes()[:10]
    assert header[3] & 0x08 == 0  # FNAME not set
    assert header[4:8] == b"\0\0\0\0"  # MTIME zero
    assert layer.diff_id == "sha256:" + __import__("hashlib").sha256(
        gzip.decompress(layer.path.read_bytes())).hexdigest()


def test_the_index_names_the_manifest_by_tag_and_by_digest_for_containerd(
        tmp_path: Path) -> None:
    layer = oci.write_layer(_tree(tmp_path / "t"), tmp_path / "l.tar.gz", SOURCE_DATE_EPOCH)
    config = oci.image_config(oci.Config("65532:65532", [("A", "1")], ["/x"], [], "/", [8443],
                                         {}), [layer], SOURCE_DATE_EPOCH, ["test"])
    manifest = oci.write_layout(tmp_path / "oci", config, [layer], "example.local/x:1.0", {})
    index = json.loads((tmp_path / "oci" / "index.json").read_text())
    names = [m["annotations"][oci.CONTAINERD_NAME] for m in index["manifests"]]
    assert names == ["example.local/x:1.0", f"example.local/x@{manifest.digest}"]
    assert {m["digest"] for m in index["manifests"]} == {manifest.digest}
    stored = json.loads(oci.blob_path(tmp_path / "oci", manifest.digest).read_bytes())
    config_blob = json.loads(oci.blob_path(tmp_path / "oci", stored["config"]["digest"])
                             .read_bytes())
    assert config_blob["config"]["User"] == "65532:65532"
    assert config_blob["config"]["ExposedPorts"] == {"8443/tcp": {}}
    assert config_blob["rootfs"]["diff_ids"] == [layer.diff_id]
    assert config_blob["created"] == "2026-01-01T00:00:00Z"


def test_an_archive_holds_the_layout_for_ctr_import(tmp_path: Path) -> None:
    layer = oci.write_layer(_tree(tmp_path / "t"), tmp_path / "l.tar.gz", SOURCE_DATE_EPOCH)
    config = oci.image_config(oci.Config("0:0", [], [], [], "/", [], {}), [layer],
                              SOURCE_DATE_EPOCH, [])
    oci.write_layout(tmp_path / "oci", config, [layer], "example.local/x:1.0", {})
    oci.write_archive(tmp_path / "oci", tmp_path / "image.tar", SOURCE_DATE_EPOCH)
    with tarfile.open(tmp_path / "image.tar") as tar:
        names = tar.getnames()
    assert {"oci-layout", "index.json", "blobs/sha256"} <= set(names)


def test_an_image_key_is_the_same_in_every_process() -> None:
    # A frozenset's repr follows per-process string hashing; the key must not. (The workload
    # image without the files it copies from the tools folder: no Go tool needed here.)
    code = ("import dataclasses;"
            "from jobset_infra.cluster.images.build import image_key;"
            "from jobset_infra.cluster.images.spec import WORKLOAD;"
            "spec = dataclasses.replace(WORKLOAD, files=tuple("
            "f for f in WORKLOAD.files if not f[0].startswith('tool:')));"
            "print(image_key(spec))")
    keys = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}, check=True).stdout
            for seed in ("1", "2", "3")}
    assert len(keys) == 1
    from dataclasses import replace

    local = tuple(f for f in WORKLOAD.files if not f[0].startswith("tool:"))
    assert keys == {image_key(replace(WORKLOAD, files=local)) + "\n"}


@pytest.mark.parametrize(
    ("change", "changes_key"),
    [
        pytest.param({"tag": "0.2.0"}, True, id="another tag makes another image"),
        pytest.param({"user": "0:0"}, True, id="another user makes another image"),
        pytest.param({"description": CONTROLLER.description}, False,
                     id="the same spec makes the same key"),
    ],
)
def test_what_goes_into_the_image_decides_its_key(change: dict[str, str],
                                                   changes_key: bool) -> None:
    from dataclasses import replace

    changed = replace(CONTROLLER, **change)  # type: ignore[arg-type]
    assert (canonical(changed) != canonical(CONTROLLER)) is changes_key


LOCK = """\
# This file was autogenerated by uv via the following command:
jax==0.10.2 ; python_full_version < '3.12' \\
    --hash=sha256:aa \\
    --hash=sha256:bb
    # via -r locks/workload.in
jax==0.12.0 ; python_full_version >= '3.12' \\
    --hash=sha256:cc
pip==25.3 \\
    --hash=sha256:dd
tzdata==2026.6 ; sys_platform == 'win32' \\
    --hash=sha256:ee
Typing_Extensions==4.16.0 \\
    --hash=sha256:ff
"""


def test_a_locks_lines_for_another_python_or_platform_are_left_out() -> None:
    blocks = python_app.requirement_blocks(LOCK)
    assert [name for name, _ in blocks] == ["jax", "pip", "typing-extensions"]
    jax = dict(blocks)["jax"]
    assert jax.startswith("jax==0.10.2 --hash=sha256:aa") and "sha256:bb" in jax
    assert ";" not in jax


def test_the_build_tools_stay_out_of_an_images_packages() -> None:
    kept = python_app.lock_without(LOCK, BUILD_TOOLS).splitlines()
    assert [line.split("==")[0] for line in kept] == ["jax", "Typing_Extensions"]
    assert python_app.lock_only(LOCK, frozenset({"pip"})).startswith("pip==25.3 --hash")
    controller = python_app.lock_without((ROOT / "locks" / "controller.txt").read_text(),
                                         BUILD_TOOLS)
    assert not {line.split("==")[0] for line in controller.splitlines()} & BUILD_TOOLS
    assert len(controller.splitlines()) > 30


def test_every_console_script_gets_a_launcher_for_the_images_python(tmp_path: Path) -> None:
    target = python_app.site_packages(tmp_path)
    info = target / "jobset_infra-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text(
        "[console_scripts]\njobset-controller = jobset_infra.controller.runtime.main:main\n")
    (info / "direct_url.json").write_text('{"url": "file:///tmp/build-1234"}')
    (info / "RECORD").write_text("jobset_infra-0.1.0.dist-info/direct_url.json,,\nx.py,,\n"
                                 "../../bin/jobset-controller,sha256=host-path-dependent,42\n")
    (target / "bin").mkdir()
    (target / "bin" / "jobset-controller").write_text("#!/host/python\n")
    python_app._venv_files(tmp_path, target, with_python=True)
    venv = tmp_path / "opt" / "venv"
    launcher = (venv / "bin" / "jobset-controller").read_text()
    assert launcher.startswith("#!/opt/venv/bin/python\n")
    assert "from jobset_infra.controller.runtime.main import main" in launcher
    assert os.readlink(venv / "bin" / "python") == "/usr/bin/python3.11"
    assert not (target / "bin").exists()  # pip's, with the host's interpreter
    assert not (info / "direct_url.json").exists()  # where this build happened to run
    assert (info / "RECORD").read_text() == "x.py,,\n"
    assert oct((venv / "bin" / "jobset-controller").stat().st_mode & 0o777) == "0o755"


@pytest.mark.parametrize(
    ("image", "user"),
    [
        pytest.param(CONTROLLER, f"{NONROOT}:{NONROOT}", id="the controller runs as 65532"),
        pytest.param(WORKLOAD, f"{NONROOT}:{NONROOT}", id="the workloads run as 65532"),
        pytest.param(PAUSE, "65535:65535", id="pause runs as 65535, as Kubernetes' does"),
        pytest.param(KUEUE, f"{NONROOT}:{NONROOT}", id="Kueue's manager runs as 65532"),
    ],
)
def test_no_image_runs_as_root(image: ImageSpec, user: str) -> None:
    assert image.user == user


def test_every_file_an_image_copies_from_the_repository_exists() -> None:
    for spec in IMAGES.values():
        for source, target in spec.files:
            assert source.startswith("tool:") or (ROOT / source).is_file(), (spec.name, source)
            assert target.startswith("/")
        if spec.app is not None:
            assert (ROOT / spec.app.lock).is_file()
            for rel in spec.app.project_files:
                assert (ROOT / rel).exists()


def test_a_layers_tar_reads_back_in_pythons_own_tarfile(tmp_path: Path) -> None:
    layer = oci.write_layer(_tree(tmp_path / "t"), tmp_path / "l.tar.gz", SOURCE_DATE_EPOCH)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(layer.path.read_bytes()))) as tar:
        extracted = tar.extractfile("b/deep/run.sh")
        assert extracted is not None and extracted.read() == b"#!/bin/sh\n"
