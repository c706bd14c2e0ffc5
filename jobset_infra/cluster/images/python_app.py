"""A virtual environment for an image, filled by this machine's pip, run by the image's Python.

The locked wheels are installed with `--require-hashes --no-deps --only-binary=:all:` for the
image's interpreter and platform (CPython 3.11, glibc 2.36 on x86-64: Debian bookworm), so the
host's own Python and libc do not decide which wheel is chosen. The project, when there is one,
is built into a wheel from a copy of its files (setuptools and wheel from the same lock, on the
path of the build only) and installed the same way. Then what pip would have made for a venv of
the image, and cannot from outside it, is written here: `bin/python`, `pyvenv.cfg` and a launcher
per console script; the record of where pip installed from (a folder that differs per build) is
dropped, and the image's interpreter compiles the byte code.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Final

from jobset_infra.cluster.images.debian import ImageBuildError, compile_tree, run
from jobset_infra.cluster.images.spec import BUILD_TOOLS, PYTHON, VENV, PythonApp

# The image's interpreter and libc (Debian bookworm, glibc 2.36): which wheels fit it. pip takes
# a --platform literally, so every manylinux tag up to 2.36 is named.
GLIBC_MINOR: Final = 36
PLATFORM_ARGS: Final = (
    "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311", "--only-binary=:all:",
    *(arg for minor in range(GLIBC_MINOR, 4, -1)
      for arg in ("--platform", f"manylinux_2_{minor}_x86_64")),
    *(arg for legacy in ("manylinux2014", "manylinux2010", "manylinux1")
      for arg in ("--platform", f"{legacy}_x86_64")),
)
PIP_QUIET: Final = ("--disable-pip-version-check", "--no-input", "--quiet")
PIP_BASE: Final = (*PIP_QUIET, "--no-compile", "--no-warn-script-location")
LAUNCHER: Final = """#!{venv}/bin/python
import sys
from {module} import {function}
if __name__ == "__main__":
    sys.exit({call})
"""


# The image's interpreter as environment markers see it: a universal lock's lines for other
# Pythons are left out here, not by the host pip (which would judge by its own Python).
IMAGE_MARKERS: Final = {
    "python_version": "3.11", "python_full_version": "3.11.2", "implementation_name": "cpython",
    "platform_python_implementation": "CPython", "sys_platform": "linux",
    "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
}


def requirement_blocks(lock: str) -> list[tuple[str, str]]:
    """(normalised package name, requirement with its hashes and no marker) for every line of a
    uv lock that applies to the image's interpreter."""
    from packaging.markers import Marker

    joined = re.sub(r"\\\n", " ", lock)
    blocks: list[tuple[str, str]] = []
    for line in joined.splitlines():
        if not line or line.startswith((" ", "#", "-")):
            continue
        head, _, options = line.partition(" --hash")
        spec, _, marker = head.partition(" ; ")
        if marker.strip() and not Marker(marker.strip()).evaluate(IMAGE_MARKERS):
            continue
        name = re.split(r"[=<>!~ ;\[]", spec, maxsplit=1)[0]
        blocks.append((re.sub(r"[-_.]+", "-", name).lower(),
                       f"{spec.strip()} --hash{options}" if options else spec.strip()))
    return blocks


def lock_without(lock: str, left_out: frozenset[str]) -> str:
    return "".join(f"{line}\n" for name, line in requirement_blocks(lock) if name not in left_out)


def lock_only(lock: str, wanted: frozenset[str]) -> str:
    return "".join(f"{line}\n" for name, line in requirement_blocks(lock) if name in wanted)


def site_packages(root: Path) -> Path:
    return root / VENV.lstrip("/") / "lib" / PYTHON / "site-packages"


def install_locked(app: PythonApp, repo: Path, root: Path, scratch: Path) -> None:
    """The locked wheels of `app` as a venv under `root` (an otherwise empty folder that
    becomes the dependencies' layer)."""
    target = site_packages(root)
    target.mkdir(parents=True)
    scratch.mkdir(parents=True, exist_ok=True)
    wheels_req = scratch / "requirements.txt"
    wheels_req.write_text(lock_without((repo / app.lock).read_text(), app.exclude))
    _pip("install", *PIP_BASE, *PLATFORM_ARGS, "--require-hashes", "--no-deps", "--target",
         str(target), "-r", str(wheels_req), what=f"pip install -r {app.lock} (hash-checked)")
    _venv_files(root, target, with_python=True)


def install_project(app: PythonApp, repo: Path, root: Path, scratch: Path) -> None:
    """The project's wheel, installed under `root` beside (not into) the locked venv: the
    project's own layer, rebuilt when its sources change while the dependencies stay."""
    target = site_packages(root)
    target.mkdir(parents=True)
    wheel = build_project(app, repo, (repo / app.lock).read_text(), scratch)
    _pip("install", *PIP_BASE, *PLATFORM_ARGS, "--no-deps", "--target", str(target),
         str(wheel), what=f"pip install {wheel.name}")
    _venv_files(root, target, with_python=False)


def build_project(app: PythonApp, repo: Path, lock: str, scratch: Path) -> Path:
    """The project's wheel, built from a copy of `app.project_files` with the locked
    setuptools and wheel (on this build's path only, never in the image)."""
    source, tools, out = scratch / "src", scratch / "build-tools", scratch / "dist"
    for folder in (source, tools, out):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    for rel in app.project_files:
        origin = repo / rel
        if origin.is_dir():
            shutil.copytree(origin, source / rel, ignore=shutil.ignore_patterns(
                "__pycache__", "*.pyc", "*.egg-info"))
        else:
            shutil.copy2(origin, source / rel)
    tools_req = scratch / "build-tools.txt"
    tools_req.write_text(lock_only(lock, BUILD_TOOLS - {"pip"}))
    _pip("install", *PIP_BASE, "--require-hashes", "--no-deps", "--target", str(tools),
         "-r", str(tools_req), what="pip install the locked setuptools and wheel")
    env = {**os.environ, "PYTHONPATH": str(tools), "SOURCE_DATE_EPOCH": "1767225600"}
    run([sys.executable, "-m", "pip", "wheel", *PIP_QUIET, "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(source)], "building the project's wheel", env=env)
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise ImageBuildError(f"the project built {len(wheels)} wheels, expected one: {wheels}")
    return wheels[0]


def _pip(*args: str, what: str) -> None:
    run([sys.executable, "-m", "pip", *args], what)


def _venv_files(root: Path, target: Path, *, with_python: bool) -> None:
    """The console scripts' launchers (and bin/python and pyvenv.cfg `with_python`); pip's
    own bin/ and direct_url.json (the install's source folder) dropped."""
    venv = root / VENV.lstrip("/")
    shutil.rmtree(target / "bin", ignore_errors=True)
    for direct_url in target.glob("*.dist-info/direct_url.json"):
        direct_url.unlink()
    for rows in target.glob("*.dist-info/RECORD"):
        # Its lines for pip's scripts (hashes of files holding the host's interpreter path) and
        # for direct_url.json go with those files.
        kept = [line for line in rows.read_text().splitlines(keepends=True)
                if not line.startswith("../") and
                not line.startswith(f"{rows.parent.name}/direct_url.json,")]
        rows.write_text("".join(kept))
    bin_dir = venv / "bin"
    bin_dir.mkdir()
    if with_python:
        (bin_dir / "python").symlink_to(f"/usr/bin/{PYTHON}")
        (bin_dir / "python3").symlink_to("python")
        (bin_dir / PYTHON).symlink_to("python")
        (venv / "pyvenv.cfg").write_text(
            "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11\n")
    for name, entry in sorted(console_scripts(target).items()):
        module, _, function = entry.partition(":")
        # `module:object.attribute` imports the object and calls its attribute.
        launcher = bin_dir / name
        launcher.write_text(LAUNCHER.format(
            venv=VENV, module=module, function=function.split(".")[0], call=f"{function}()"))
        launcher.chmod(0o755)
    normalise_modes(venv)


def console_scripts(target: Path) -> dict[str, str]:
    """Script name -> `module:function` of every installed distribution's console scripts."""
    found: dict[str, str] = {}
    for path in sorted(target.glob("*.dist-info/entry_points.txt")):
        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        parser.read_string(path.read_text())
        if parser.has_section("console_scripts"):
            found.update({k: v.strip() for k, v in parser.items("console_scripts")})
    return found


def normalise_modes(top: Path) -> None:
    """0755 for folders and anything executable, 0644 for the rest: what pip's umask made
    must not decide the layer's bytes."""
    for path in [top, *top.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        path.chmod(0o755 if path.is_dir() or mode & 0o111 else 0o644)


def compile_venv(base_root: Path, app_root: Path) -> None:
    """Byte-compile the venv under `app_root` with the image's interpreter: it is moved into
    the base root for the compile and back (no mount needed)."""
    inside = base_root / VENV.lstrip("/")
    if inside.exists():
        raise ImageBuildError(f"{inside} exists in the base root; it must hold no {VENV}")
    inside.parent.mkdir(parents=True, exist_ok=True)
    source = app_root / VENV.lstrip("/")
    source.rename(inside)
    try:
        compile_tree(base_root, PYTHON, VENV)
    finally:
        inside.rename(source)
        if not any(inside.parent.iterdir()):
            inside.parent.rmdir()
    normalise_modes(source)
