"""What goes into each image: the one declaration the builder reads and the Dockerfile is
checked against (tests/test_dockerfile.py compares its user, environment, entry point, ports,
working folder, lock and excluded build tools with `CONTROLLER`).

Pure data. Paths of `project_files` and `lock` are relative to the repository root; a binary is
named as `tools/build.py` links it into the tools folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

REGISTRY: Final = "jobset-infra.local"
"""The images' registry host: nothing serves it; images reach the nodes by import, never a pull."""

NONROOT: Final = 65532
SOURCE_DATE_EPOCH: Final = 1767225600
"""Every file's time in every layer, and the images' creation time: 2026-01-01T00:00:00Z (the
Dockerfile's SOURCE_DATE_EPOCH)."""

PYTHON: Final = "python3.11"
VENV: Final = "/opt/venv"
BUILD_TOOLS: Final = frozenset({"pip", "setuptools", "wheel"})
"""Locked in locks/controller.txt for the Dockerfile's build stage; never in an image."""


@dataclass(frozen=True)
class DebianBase:
    """A root filesystem of Debian packages and what they depend on (no Recommends)."""

    suite: str
    sources: tuple[str, ...]
    packages: tuple[str, ...]


@dataclass(frozen=True)
class PythonApp:
    """A virtual environment at VENV: the wheels of `lock` (hash-checked, no resolution), and
    the project built from `project_files` when there are any."""

    lock: str
    exclude: frozenset[str] = BUILD_TOOLS
    project_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImageSpec:
    name: str
    repository: str
    tag: str
    description: str
    base: DebianBase | None = None
    app: PythonApp | None = None
    files: tuple[tuple[str, str], ...] = ()
    """(repository-relative source or `tool:<name>`, path in the image) copied as they are."""
    user: str = f"{NONROOT}:{NONROOT}"
    env: tuple[tuple[str, str], ...] = ()
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    workdir: str = "/"
    exposed_ports: tuple[int, ...] = ()
    labels: tuple[tuple[str, str], ...] = field(default=())

    @property
    def reference(self) -> str:
        """`repository:tag`, the name the image is imported under."""
        return f"{self.repository}:{self.tag}"


BOOKWORM: Final = DebianBase(
    suite="bookworm",
    sources=(
        "deb http://deb.debian.org/debian bookworm main",
        "deb http://deb.debian.org/debian bookworm-updates main",
        "deb http://deb.debian.org/debian-security bookworm-security main",
    ),
    # The interpreter and its standard library (ssl, sqlite3, ...), and the C++ runtime that
    # compiled wheels link (google-re2, under cel-python: without it the controller's first
    # validation died with "libstdc++.so.6: cannot open shared object file" on a real node).
    # No pip, no compiler, no shell beyond what these depend on.
    packages=(f"{PYTHON}-minimal", f"lib{PYTHON}-stdlib", "libstdc++6"),
)

_PYTHON_ENV: Final = (
    ("PATH", f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
    # The root filesystem is read-only: nothing to write byte code to (it is compiled in).
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PYTHONUNBUFFERED", "1"),
)

CONTROLLER: Final = ImageSpec(
    name="controller",
    repository=f"{REGISTRY}/jobset-controller",
    tag="0.1.0",
    description="the JobSet controller (jobset-controller) on Debian's Python",
    base=BOOKWORM,
    app=PythonApp(lock="locks/controller.txt",
                  project_files=("pyproject.toml", "README.md", "LICENSE", "jobset_infra")),
    env=_PYTHON_ENV,
    entrypoint=("jobset-controller",),
    workdir="/tmp",
    exposed_ports=(8081, 8443),
)

IN_PLACE_RESTART_AGENT: Final = "/usr/local/bin/in-place-restart-agent"
"""Upstream's in-place restart agent in the workload image."""

WORKLOAD: Final = ImageSpec(
    name="workload",
    repository=f"{REGISTRY}/jax-cpu",
    tag="0.1.0",
    description="the examples' workloads: Python with JAX for CPU, and upstream's in-place "
                "restart agent (KEP-467) to wrap a worker in main-container mode",
    base=BOOKWORM,
    app=PythonApp(lock="locks/workload.txt"),
    # The agent as tools/build.py builds it from sigs.k8s.io/jobset at the pin of
    # tools/jobset-parity (static). The image has no shell: the agent runs its WORKER_COMMAND as
    # `$SHELL -c <command>`, so a Pod sets SHELL to Python and gives the worker as Python code.
    files=(("examples/jax-cpu/train.py", "/opt/jax-cpu/train.py"),
           ("tool:in-place-restart-agent", IN_PLACE_RESTART_AGENT)),
    env=_PYTHON_ENV,
    entrypoint=("python",),
    workdir="/tmp",
)

PAUSE: Final = ImageSpec(
    name="pause",
    repository=f"{REGISTRY}/pause",
    tag="0.1.0",
    description="every pod's sandbox process (tools/pause), containerd's sandbox image",
    files=(("tool:pause", "/pause"),),
    user="65535:65535",
    entrypoint=("/pause",),
)

KUEUE: Final = ImageSpec(
    name="kueue",
    repository=f"{REGISTRY}/kueue",
    tag="0.1.0",
    description="the Kueue manager `make tools` builds, where Kueue's chart runs it (/manager)",
    files=(("tool:kueue", "/manager"),),
    entrypoint=("/manager",),
)

IMAGES: Final[dict[str, ImageSpec]] = {i.name: i for i in (CONTROLLER, WORKLOAD, PAUSE, KUEUE)}
