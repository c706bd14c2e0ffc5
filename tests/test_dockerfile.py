"""The controller image's Dockerfile: pinned base, non-root user, pinned closure, slim runtime."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
# What jobset-controller imports at run time (the Pulumi SDKs are deliberately not here).
CONTROLLER_ROOTS = (
    "pydantic",
    "PyYAML",
    "jsonschema",
    "kubernetes-validate",
    "cel-python",
    "aiohttp",
    "kubernetes-asyncio",
    "prometheus-client",
)


def instructions() -> list[tuple[str, str]]:
    """Return (INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    pairs = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            pairs.append((keyword.upper(), rest.strip()))
    return pairs


def _args() -> dict[str, str]:
    return dict(rest.split("=", 1) for kw, rest in instructions() if kw == "ARG" and "=" in rest)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned() -> dict[str, str]:
    """Return package -> version of every `name==version` the Dockerfile installs."""
    pins: dict[str, str] = {}
    for keyword, rest in instructions():
        if keyword == "RUN" and "pip install" in rest:
            for name, version in re.findall(r"([A-Za-z0-9_.\-]+)==([A-Za-z0-9_.+\-]+)", rest):
                pins[_normal(name)] = version
    return pins


def closure(roots: tuple[str, ...]) -> dict[str, str]:
    """Return the installed versions of `roots` and everything they require here."""
    seen: dict[str, str] = {}
    stack = list(roots)
    while stack:
        dist = importlib.metadata.distribution(stack.pop())
        name = _normal(dist.metadata["Name"])
        if name in seen:
            continue
        seen[name] = dist.version
        for text in dist.requires or []:
            requirement = Requirement(text)
            marker: Marker | None = requirement.marker
            if marker is None or marker.evaluate({"extra": ""}):
                stack.append(requirement.name)
    return seen


def test_base_image_is_an_exact_python_311_slim_release_or_a_digest() -> None:
    bases = [rest.split()[0] for kw, rest in instructions() if kw == "FROM"]
    assert bases, "no FROM"
    image = _args()["PYTHON_IMAGE"]
    assert all(base in ("${PYTHON_IMAGE}", image) for base in bases)
    # An exact release tag and its digest: the tag says what it is, the digest makes it so.
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?@sha256:[0-9a-f]{64}", image), image


def test_final_stage_runs_as_a_numeric_non_root_user() -> None:
    steps = instructions()
    last_from = max(i for i, (kw, _) in enumerate(steps) if kw == "FROM")
    users = [rest for kw, rest in steps[last_from:] if kw == "USER"]
    assert users, "the final stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_entrypoint_is_the_controller() -> None:
    entrypoints = [rest for kw, rest in instructions() if kw == "ENTRYPOINT"]
    assert entrypoints == ['["jobset-controller"]']


def test_every_pip_install_is_pinned() -> None:
    for keyword, rest in instructions():
        if keyword == "RUN" and "pip install" in rest:
            for command in rest.split("&&"):
                if "pip install" not in command:
                    continue
                words = command.split("pip install", 1)[1].split()
                packages = [w for w in words if not w.startswith("-") and w != "."]
                assert all("==" in p for p in packages), command


def test_pins_are_exactly_the_controller_closure_the_tests_run_with() -> None:
    want = closure(CONTROLLER_ROOTS)
    got = {name: version for name, version in pinned().items() if name in want}
    assert got == want
    tooling = {"pip", "setuptools", "wheel"}
    assert set(pinned()) - set(want) == tooling


def test_package_is_installed_from_source_without_its_pulumi_dependencies() -> None:
    installs = [rest for kw, rest in instructions() if kw == "RUN" and "install --no-deps" in rest]
    assert any(
        re.search(r"pip install --no-deps --no-build-isolation \.(\s|$)", r) for r in installs
    )
    assert not any("pulumi" in name for name in pinned())


@pytest.mark.timeout(60)
def test_controller_entry_point_imports_without_pulumi() -> None:
    # The image has no Pulumi SDKs: importing the controller must not need them.
    blocked = ["pulumi", "pulumi_gcp", "pulumi_kubernetes", "pulumi_docker_build", "kubernetes"]
    code = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "from jobset_infra.controller.runtime.main import main\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_dockerignore_sends_only_the_package_sources() -> None:
    lines = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line]
    assert "*" in lines
    assert {"!pyproject.toml", "!README.md", "!jobset_infra/"} <= set(lines)
