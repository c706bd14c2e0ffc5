"""A root filesystem from Debian's packages: mmdebstrap resolves and downloads them once, then
`dpkg-deb` extracts the same .deb files in the same order on every build.

mmdebstrap's `extract` variant runs no maintainer script and installs no package manager state;
we keep the .deb files it downloaded (its extract hook copies them out), so a rebuild extracts
exactly the files of the first and needs no network. What a package's postinst would have done
and an image needs is done here: the standard library's byte code (compiled by the image's own
interpreter in a chroot, hashed, not timed), the users, a world-writable /tmp. Documentation
other than copyright notices and manual pages are left out, as Debian's slim images do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from jobset_infra.cluster.images.spec import NONROOT, DebianBase

LEFT_OUT: Final = ("usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian",
                   "usr/share/linda")
PASSWD: Final = (f"root:x:0:0:root:/root:/sbin/nologin\n"
                 f"nonroot:x:{NONROOT}:{NONROOT}:nonroot:/tmp:/sbin/nologin\n")
GROUP: Final = f"root:x:0:\nnonroot:x:{NONROOT}:\n"


class ImageBuildError(RuntimeError):
    """A build step failed; the message names the step and quotes its output."""


def run(argv: Sequence[str], what: str, *, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> str:
    """Run a build step; ImageBuildError with its output's tail when it fails."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, env=env, cwd=cwd,
                              check=False)
    except FileNotFoundError as err:
        raise ImageBuildError(f"{what}: {argv[0]} is not installed ({err.strerror}); on Debian: "
                              f"apt-get install -y {_package_of(argv[0])}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise ImageBuildError(f"{what} failed (exit {done.returncode}):\n{tail}")
    return done.stdout


def _package_of(program: str) -> str:
    return {"dpkg-deb": "dpkg", "chroot": "coreutils"}.get(program, program)


def download(base: DebianBase, debs: Path, scratch: Path) -> list[Path]:
    """The .deb files of `base.packages` and everything they depend on, in `debs` (kept from an
    earlier call when the folder is complete)."""
    done = debs / "complete"
    if done.exists():
        return sorted(debs.glob("*.deb"))
    shutil.rmtree(debs, ignore_errors=True)
    debs.mkdir(parents=True)
    target = scratch
    shutil.rmtree(target, ignore_errors=True)
    run(["mmdebstrap", "--variant=extract", "--quiet", f"--include={','.join(base.packages)}",
         "--skip=download/empty",
         "--setup-hook=mkdir -p \"$1/var/cache/apt/archives\"",
         f"--extract-hook=sync-out /var/cache/apt/archives {debs}",
         base.suite, str(target), *base.sources],
        f"mmdebstrap (Debian {base.suite}: {', '.join(base.packages)})")
    shutil.rmtree(target, ignore_errors=True)
    found = sorted(debs.glob("*.deb"))
    if not found:
        raise ImageBuildError(f"mmdebstrap downloaded no package into {debs}")
    shutil.rmtree(debs / "partial", ignore_errors=True)
    done.write_text("".join(f"{p.name}\n" for p in found))
    return found


def extract(debs: Sequence[Path], root: Path) -> None:
    """Unpack every .deb into `root` (made afresh), by file name order."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for deb in sorted(debs, key=lambda p: p.name):
        run(["dpkg-deb", "--extract", str(deb), str(root)], f"dpkg-deb --extract {deb.name}")


def finish(root: Path, python: str) -> None:
    """What maintainer scripts and an image need: users, /tmp, no docs, compiled stdlib."""
    for rel in LEFT_OUT:
        shutil.rmtree(root / rel, ignore_errors=True)
    docs = root / "usr/share/doc"
    if docs.is_dir():
        for path in sorted(docs.rglob("*"), reverse=True):
            if (path.is_file() and path.name != "copyright") or path.is_symlink():
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    etc = root / "etc"
    etc.mkdir(exist_ok=True)
    for name, text in (("passwd", PASSWD), ("group", GROUP)):
        (etc / name).write_text(text)
        (etc / name).chmod(0o644)
    for folder, mode in (("tmp", 0o1777), ("proc", 0o755), ("sys", 0o755), ("dev", 0o755)):
        (root / folder).mkdir(exist_ok=True)
        (root / folder).chmod(mode)
    compile_tree(root, python, f"/usr/lib/{python}")


def compile_tree(root: Path, python: str, *folders: str) -> None:
    """Byte-compile `folders` of `root` with its own interpreter (chroot): hash-based .pyc
    (no source times), a fixed hash seed (frozenset constants keep one order)."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONHASHSEED": "0", "LC_ALL": "C.UTF-8"}
    run(["chroot", str(root), f"/usr/bin/{python}", "-m", "compileall", "-q",
         "--invalidation-mode", "unchecked-hash", *folders],
        f"compileall {' '.join(folders)} (in the image's root, by its {python})", env=env)


def require_root() -> None:
    if os.geteuid() != 0:
        raise ImageBuildError("image builds need root (mmdebstrap extracts as root, and the "
                              "image's own Python compiles its byte code in a chroot); run as root")
