"""pyproject.toml and what a release uploads: the license form setuptools >= 77 reads, the
metadata PyPI shows (classifiers, URLs, absolute README links), one version, sdist and wheel."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.test_dockerfile import CONTROLLER_LOCK, instructions, locked

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# The first setuptools that reads `project.license` as an SPDX expression and `license-files`
# (PEP 639); older ones refuse the string, newer ones warn about the table form.
SPDX_SETUPTOOLS = Version("77.0.0")


def _setuptools_requirement() -> Requirement:
    [requirement] = [
        r for r in map(Requirement, PROJECT["build-system"]["requires"]) if r.name == "setuptools"
    ]
    return requirement


def test_the_license_is_an_spdx_expression_with_its_file() -> None:
    assert PROJECT["project"]["license"] == "Apache-2.0"
    files = PROJECT["project"]["license-files"]
    assert files and all(sorted(ROOT.glob(pattern)) for pattern in files), files
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]


def test_the_build_requires_a_setuptools_that_reads_that_form() -> None:
    specifier = _setuptools_requirement().specifier
    assert SPDX_SETUPTOOLS in specifier
    assert Version("76.1.0") not in specifier, "setuptools < 77 refuses a string license"


def test_the_image_build_has_the_license_file_and_a_new_enough_setuptools() -> None:
    copied = " ".join(rest for keyword, rest in instructions() if keyword == "COPY")
    assert all(pattern in copied.split() for pattern in PROJECT["project"]["license-files"])
    assert Version(locked(CONTROLLER_LOCK)["setuptools"]) in _setuptools_requirement().specifier


# --- ready to publish --------------------------------------------------------------------------

README = ROOT / "README.md"
REPOSITORY = PROJECT["project"]["urls"]["Repository"]


def test_every_readme_link_is_absolute_and_those_into_the_repository_name_a_file_it_has() -> None:
    """The README is the PyPI page, where a relative link goes nowhere."""
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text())
    assert links
    relative = [link for link in links if not link.startswith(("https://", "http://"))]
    assert relative == [], "PyPI shows the README: links must be absolute"
    prefix = f"{REPOSITORY}/blob/main/"
    ours = [link.removeprefix(prefix).partition("#")[0] for link in links
            if link.startswith(prefix)]
    assert ours and [p for p in ours if not (ROOT / p).is_file()] == []


def test_the_classifiers_name_every_python_ci_tests_and_the_urls_are_set() -> None:
    project = PROJECT["project"]
    tested = f"{sys.version_info.major}.{sys.version_info.minor}"  # this run's interpreter
    versions = [c.rsplit(" ", 1)[-1] for c in project["classifiers"]
                if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    # CI runs the suite on 3.11 (.ci/run) and a smoke of it on 3.12 and 3.13 (.ci/pythons).
    ci_pythons = (ROOT / ".ci" / "pythons").read_text()
    assert tested in versions and versions == ["3.11", "3.12", "3.13"]
    assert "for version in 3.12 3.13; do" in ci_pythons
    assert project["requires-python"] == ">=3.11"
    assert set(project["urls"]) >= {"Homepage", "Repository", "Issues", "Changelog"}
    assert "Typing :: Typed" in project["classifiers"] and (ROOT / "jobset_infra/py.typed").exists()


def test_the_version_is_declared_once_and_both_commands_print_it(
    capsys: pytest.CaptureFixture[str]
) -> None:
    from jobset_infra import __version__
    from jobset_infra.api.controller_flags import parse_config
    from jobset_infra.cli import main

    assert "version" not in PROJECT["project"] and "version" in PROJECT["project"]["dynamic"]
    assert PROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "jobset_infra.__version__"}
    for run, name in ((lambda: main(["--version"]), "jobset-infra"),
                      (lambda: parse_config(["--version"]), "jobset-controller")):
        with pytest.raises(SystemExit) as exit_:
            run()
        assert exit_.value.code == 0
        assert capsys.readouterr().out == f"{name} {__version__}\n"
    assert f"## [{__version__}]" in (ROOT / "CHANGELOG.md").read_text()


@pytest.mark.slow
def test_python_m_build_makes_an_sdist_and_a_wheel_with_the_data_files(tmp_path: Path) -> None:
    """What a release uploads: `python -m build` (no isolation: the venv's locked setuptools)."""
    import shutil
    import subprocess
    import tarfile
    import zipfile

    from jobset_infra import __version__

    # From a copy of the checkout: the build writes its egg-info into the source tree, and CI's
    # .ci/pythons installs the same checkout editable (writing it too) while the suite runs.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "*.egg-info", "build", "dist", "__pycache__", ".*_cache"))
    ran = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                          str(tmp_path), str(source)], capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    [wheel] = tmp_path.glob(f"jobset_infra-{__version__}-py3-none-any.whl")
    [sdist] = tmp_path.glob(f"jobset_infra-{__version__}.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"jobset_infra-{__version__}.dist-info/METADATA").decode()
    for data in ("jobset_infra/py.typed", "jobset_infra/api/kueue_crds.json",
                 "jobset_infra/api/crd/jobset.x-k8s.io_jobsets.yaml"):
        assert data in names, data
    assert f"Project-URL: Repository, {REPOSITORY}" in metadata
    assert "Classifier: Programming Language :: Python :: 3.11" in metadata
    with tarfile.open(sdist) as archive:
        members = {m.name.partition("/")[2] for m in archive.getmembers()}
    assert {"CHANGELOG.md", "LICENSE", "README.md", "pyproject.toml"} <= members
    assert not any(m.startswith("tests/") for m in members)
