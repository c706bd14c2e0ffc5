"""The controller image, built without a Docker daemon (jobset-infra image build): the same
digest when built again from the same inputs, non-root, compiled, and nothing of the build in it.
Building it is this tier's (root, mmdebstrap, PyPI). The `kueue` image likewise: the same digest
again, the static manager alone, non-root."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from jobset_infra.cluster.images.build import Built, build_image
from jobset_infra.cluster.images.oci import blob_path
from jobset_infra.cluster.images.spec import CONTROLLER, KUEUE
from tests.realcluster import image_tools_or_skip, tools_or_skip

pytestmark = [pytest.mark.real, pytest.mark.realnode, pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def built() -> Built:
    image_tools_or_skip()
    return build_image(CONTROLLER)


def _manifest(image: Built) -> dict[str, object]:
    index = json.loads((image.layout / "index.json").read_text())
    manifest: dict[str, object] = json.loads(
        blob_path(image.layout, index["manifests"][0]["digest"]).read_bytes())
    return manifest


def _names(image: Built) -> set[str]:
    names: set[str] = set()
    for layer in _manifest(image)["layers"]:  # type: ignore[attr-defined]
        with tarfile.open(blob_path(image.layout, layer["digest"]), "r:gz") as tar:
            names.update(tar.getnames())
    return names


def test_building_again_from_the_same_inputs_gives_the_same_digest(built: Built) -> None:
    # Every step a source change redoes, again: the project's wheel built and installed, its
    # byte code compiled, its layer, the config, manifest, index and archive written. (The Debian
    # base and the lock's venv, each cached by its own inputs, are rebuilt in full by
    # `jobset-infra image build --rebuild`: docs/cluster.md "Images" records that run.)
    again = build_image(CONTROLLER, rebuild=True, reuse_lower=True)
    assert not again.cached
    assert again.digest == built.digest
    assert again.archive.read_bytes() == built.archive.read_bytes()


def test_the_image_runs_the_controller_as_65532_from_a_read_only_friendly_root(
        built: Built) -> None:
    config_digest = _manifest(built)["config"]["digest"]  # type: ignore[index]
    config = json.loads(blob_path(built.layout, config_digest).read_bytes())["config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["jobset-controller"]
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]  # nothing to write on a read-only root


def test_no_build_tool_cache_or_source_path_is_in_the_image(built: Built) -> None:
    names = _names(built)
    site = "opt/venv/lib/python3.11/site-packages"
    assert f"{site}/jobset_infra/controller/runtime/main.py" in names
    for tool in ("pip", "setuptools", "wheel"):
        assert not any(n.startswith(f"{site}/{tool}/") for n in names), tool
    assert not any(n.startswith(("root/.cache", "tmp/")) and n != "tmp/" for n in names)
    assert not any(n.endswith("direct_url.json") for n in names)
    assert not {"usr/bin/gcc", "usr/bin/cc", "usr/bin/apt", "usr/bin/apt-get"} & names
    # Byte code for every module of ours, written at build time (the root is read-only).
    ours = [n for n in names if n.startswith(f"{site}/jobset_infra/") and n.endswith(".py")]
    compiled = {n for n in names if "/__pycache__/" in n}
    missing = [n for n in ours if not any(
        c.startswith(str(Path(n).parent / "__pycache__" / Path(n).stem) + ".cpython-311")
        for c in compiled)]
    assert ours and missing == []


@pytest.fixture(scope="module")
def kueue() -> Built:
    image_tools_or_skip()
    tools_or_skip()  # the manager binary `make tools` built
    return build_image(KUEUE)


def test_the_kueue_image_builds_again_to_the_same_digest(kueue: Built) -> None:
    again = build_image(KUEUE, rebuild=True)
    assert not again.cached
    assert again.digest == kueue.digest
    assert again.archive.read_bytes() == kueue.archive.read_bytes()


def test_the_kueue_image_is_the_static_manager_alone_run_as_65532(kueue: Built) -> None:
    config_digest = _manifest(kueue)["config"]["digest"]  # type: ignore[index]
    config = json.loads(blob_path(kueue.layout, config_digest).read_bytes())["config"]
    assert config["User"] == "65532:65532"  # the chart's runAsNonRoot holds
    assert config["Entrypoint"] == ["/manager"]  # where Kueue's chart runs it
    assert _names(kueue) == {"manager"}  # nothing to write to: a read-only root is no loss
    [layer] = _manifest(kueue)["layers"]  # type: ignore[misc]
    with tarfile.open(blob_path(kueue.layout, layer["digest"]), "r:gz") as tar:
        member = tar.getmember("manager")
        assert member.mode & 0o111 and (member.uid, member.gid) == (0, 0)
        manager = tar.extractfile(member)
        assert manager is not None
        header = manager.read(1 << 16)
    assert header[:4] == b"\x7fELF" and b"/lib64/ld-linux" not in header  # static: no loader
