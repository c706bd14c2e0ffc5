"""The controller image's Dockerfile and the lock files: pinned base, non-root user, a hashed
lock of exactly the controller's closure, slim runtime; the platform lock agrees with it."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
CONTROLLER_LOCK = ROOT / "locks" / "controller.txt"
PLATFORM_LOCK = ROOT / "locks" / "platform.txt"
TEST_LOCK = ROOT / "locks" / "test.txt"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# What jobset-controller imports at run time: the base dependencies (no Pulumi SDK among them).
CONTROLLER_ROOTS = tuple(Requirement(r).name for r in PROJECT["dependencies"])
TOOLING = {"pip", "setuptools", "wheel"}
PULUMI_SDKS = {"pulumi", "pulumi-kubernetes", "pulumi-gcp", "pulumi-docker-build"}


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


def locked(lock: Path) -> dict[str, str]:
    """Return package -> version of every `name==version` a lock file pins."""
    pins = re.findall(r"^([A-Za-z0-9_.\-]+)==([A-Za-z0-9_.+\-]+)", lock.read_text(), flags=re.M)
    return {_normal(name): version for name, version in pins}


def requirement_blocks(lock: Path) -> list[str]:
    """Each pinned requirement with its continuation lines (its hashes)."""
    text = re.sub(r"\\\n", " ", lock.read_text())
    return [line for line in text.splitlines() if line and not line.startswith((" ", "#"))]


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


def test_every_pip_install_is_the_hashed_lock_or_the_package_without_deps() -> None:
    installs = [
        command.split("pip install", 1)[1].split()
        for keyword, rest in instructions()
        if keyword == "RUN" and "pip install" in rest
        for command in rest.split("&&")
        if "pip install" in command
    ]
    assert installs
    for words in installs:
        if "." in words:
            assert {"--no-deps", "--no-build-isolation"} <= set(words), words
        else:
            assert {"--require-hashes", "--no-deps", "-r"} <= set(words), words
            assert [w for w in words if not w.startswith("-")] == ["/tmp/controller.txt"]
    copies = [rest.split() for kw, rest in instructions() if kw == "COPY"]
    assert ["locks/controller.txt", "/tmp/controller.txt"] in copies


def test_lock_pins_exactly_the_controller_closure_the_tests_run_with() -> None:
    want = closure(CONTROLLER_ROOTS)
    pins = locked(CONTROLLER_LOCK)
    assert {name: version for name, version in pins.items() if name not in TOOLING} == want
    assert set(pins) - set(want) == TOOLING


@pytest.mark.parametrize(
    "lock",
    [
        pytest.param(CONTROLLER_LOCK, id="the controller lock"),
        pytest.param(PLATFORM_LOCK, id="the platform lock"),
        pytest.param(TEST_LOCK, id="the test lock"),
    ],
)
def test_every_locked_package_has_hashes(lock: Path) -> None:
    blocks = requirement_blocks(lock)
    assert len(blocks) == len(locked(lock)) > 10
    unhashed = [b.split()[0] for b in blocks if "--hash=sha256:" not in b]
    assert unhashed == []
    assert "autogenerated by uv" in lock.read_text().partition("\n")[0]


def test_platform_lock_adds_the_pulumi_sdks_at_the_controller_versions() -> None:
    controller, platform = locked(CONTROLLER_LOCK), locked(PLATFORM_LOCK)
    shared = set(controller) & set(platform)
    assert {n: controller[n] for n in shared} == {n: platform[n] for n in shared}
    assert set(controller) - TOOLING <= set(platform)
    assert set(platform) >= PULUMI_SDKS
    assert not PULUMI_SDKS & set(controller)


def test_test_lock_adds_the_test_tools_at_the_platform_versions() -> None:
    platform, test = locked(PLATFORM_LOCK), locked(TEST_LOCK)
    assert {n: platform[n] for n in platform} == {n: test[n] for n in platform}
    assert {"pytest", "ruff", "mypy", "import-linter", "coverage", "uv"} <= set(test)


def test_pulumi_sdks_are_the_platform_extra_and_gcp_one_major() -> None:
    base = {_normal(Requirement(r).name) for r in PROJECT["dependencies"]}
    extra = PROJECT["optional-dependencies"]["platform"]
    platform = {Requirement(r).name: Requirement(r) for r in extra}
    assert not any(name.startswith("pulumi") for name in base)
    assert set(platform) == PULUMI_SDKS
    gcp = platform["pulumi-gcp"].specifier
    majors = {v.split(".")[0] for v in ("8.0", "9.0", "10.0", "10.9", "11.0") if gcp.contains(v)}
    assert majors == {"10"}


def test_package_is_installed_from_source_without_resolving_dependencies() -> None:
    installs = [rest for kw, rest in instructions() if kw == "RUN" and "install --no-deps" in rest]
    assert any(
        re.search(r"pip install --no-deps --no-build-isolation \.(\s|$)", r) for r in installs
    )


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
    assert {"!pyproject.toml", "!README.md", "!locks/controller.txt", "!jobset_infra/"} <= set(
        lines
    )


def test_every_file_the_dockerfile_copies_is_in_the_build_context() -> None:
    # `*` leaves everything out of the context, so each COPY source needs its own `!` line.
    lines = {line for line in (ROOT / ".dockerignore").read_text().splitlines() if line}
    sources = [
        source
        for keyword, rest in instructions()
        if keyword == "COPY" and not rest.startswith("--from")
        for source in rest.split()[:-1]
    ]
    assert sources
    missing = [s for s in sources if f"!{s.rstrip('/')}" not in lines and f"!{s}/" not in lines]
    assert missing == [], f"add !<path> to .dockerignore for {missing}"


# --- one declaration: the Dockerfile builds what jobset_infra/cluster/images/spec.py declares ----


def _final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (kw, _) in enumerate(steps) if kw == "FROM")
    return steps[last_from:]


def _env(stage: list[tuple[str, str]]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for keyword, rest in stage:
        if keyword == "ENV":
            pairs.update(item.split("=", 1) for item in rest.split())
    return pairs


def test_the_dockerfile_runs_what_the_daemonless_image_declares() -> None:
    from jobset_infra.cluster.images.spec import CONTROLLER

    stage = _final_stage()
    last = {keyword: rest for keyword, rest in stage}
    assert _env(stage) == dict(CONTROLLER.env)
    assert last["USER"] == CONTROLLER.user
    assert last["WORKDIR"] == CONTROLLER.workdir
    assert sorted(int(p) for p in last["EXPOSE"].split()) == sorted(CONTROLLER.exposed_ports)
    assert last["ENTRYPOINT"] == json.dumps(list(CONTROLLER.entrypoint))


def test_the_dockerfile_installs_what_the_daemonless_image_declares() -> None:
    from jobset_infra.cluster.images.spec import CONTROLLER

    assert CONTROLLER.app is not None
    copies = [rest.split() for kw, rest in instructions() if kw == "COPY"]
    copied = {source for words in copies if words[0] != "--from=build" for source in words[:-1]}
    assert CONTROLLER.app.lock in copied
    assert set(CONTROLLER.app.project_files) == copied - {CONTROLLER.app.lock}


def test_neither_image_keeps_the_build_tools() -> None:
    from jobset_infra.cluster.images.spec import CONTROLLER

    assert CONTROLLER.app is not None
    assert CONTROLLER.app.exclude == TOOLING
    uninstalls = [rest for kw, rest in instructions() if kw == "RUN" and "pip uninstall" in rest]
    assert uninstalls
    removed = set(uninstalls[-1].split("pip uninstall", 1)[1].split()) - {"--yes", "--quiet"}
    assert removed == TOOLING
