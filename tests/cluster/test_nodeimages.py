"""The real nodes' images: one template containerd root per set of images, hard-linked into each
node's root (cluster/nodeimages.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobset_infra.cluster.nodeimages import seed_root, template_key


def test_a_template_is_one_per_set_of_images_and_containerd() -> None:
    containerd = Path("/b/containerd")
    key = template_key(["sha256:b", "sha256:a"], containerd)
    assert key == template_key(["sha256:a", "sha256:b"], containerd)  # any order
    assert key != template_key(["sha256:a"], containerd)
    assert key != template_key(["sha256:a", "sha256:b"], Path("/other/containerd"))


def test_a_seeded_root_links_every_file_copies_the_databases_and_keeps_folder_attributes(
        tmp_path: Path) -> None:
    template = tmp_path / "template"
    layer = template / "io.containerd.snapshotter.v1.overlayfs" / "snapshots" / "1" / "fs"
    (layer / "etc").mkdir(parents=True)
    (layer / "etc" / "passwd").write_text("root:x:0:0\n")
    (layer / "lib").symlink_to("usr/lib")
    (layer / "etc").chmod(0o750)
    try:
        os.setxattr(layer / "etc", "user.marker", b"y")  # as overlayfs's trusted.overlay.opaque
        xattrs = True
    except OSError:  # a file system without user xattrs: the rest still holds
        xattrs = False
    meta = template / "io.containerd.metadata.v1.bolt" / "meta.db"
    meta.parent.mkdir(parents=True)
    meta.write_bytes(b"bolt")
    root = tmp_path / "node" / "containerd"
    root.parent.mkdir()

    made = seed_root(template, root)

    copied = root / layer.relative_to(template)
    assert (copied / "etc" / "passwd").stat().st_ino == (layer / "etc" / "passwd").stat().st_ino
    assert (copied / "etc").stat().st_ino != (layer / "etc").stat().st_ino  # a folder of its own
    assert (copied / "etc").stat().st_mode & 0o7777 == 0o750
    assert os.readlink(copied / "lib") == "usr/lib"
    node_meta = root / meta.relative_to(template)
    assert node_meta.read_bytes() == b"bolt" and node_meta.stat().st_ino != meta.stat().st_ino
    if xattrs:
        assert os.getxattr(copied / "etc", "user.marker") == b"y"
    assert made == 10  # 7 folders, the file, the link, the database
    # the node writes its own database; the template's stays as it was
    node_meta.write_bytes(b"changed")
    assert meta.read_bytes() == b"bolt"


def test_seeding_into_an_existing_root_is_refused_by_the_file_system(tmp_path: Path) -> None:
    template = tmp_path / "t"
    (template / "a").mkdir(parents=True)
    (template / "a" / "f").write_text("x")
    root = tmp_path / "r"
    seed_root(template, root)
    with pytest.raises(FileExistsError):  # a node's root is seeded once, before containerd
        seed_root(template, root)


def test_a_new_template_prunes_all_but_the_most_recently_used_and_those_in_use(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    from jobset_infra.cluster import nodeimages

    monkeypatch.setattr(nodeimages, "templates_root", lambda: tmp_path)
    for age, name in enumerate(["new", "a", "b", "c", "d", "e"]):
        (tmp_path / name / "root").mkdir(parents=True)
        os.utime(tmp_path / name, (1000 - age, 1000 - age))  # "a" the most recent after "new"
    with (tmp_path / "e.lock").open("a") as held:  # "e", the oldest, in use by another run
        fcntl.flock(held, fcntl.LOCK_SH)
        nodeimages._prune(keep="new")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["a", "b", "c", "e",
                                                                         "new"]
