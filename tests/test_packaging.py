"""pyproject.toml: the license in the form setuptools >= 77 reads without a deprecation warning."""

from __future__ import annotations

import tomllib
from pathlib import Path

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
