"""Start, watch and stop the cluster's processes; the only module here that spawns anything.

Each process writes to its own log file in the cluster folder and runs in its own session, so
`cluster up` can return while the control plane keeps running and `cluster down` can stop it
later by the PIDs in the state file. A PID is only signalled while `/proc/<pid>/cmdline` still
names the binary we started, so a recycled PID is never killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from jobset_infra.cluster.layout import ProcessSpec

LOG_TAIL_LINES = 15


class ComponentError(RuntimeError):
    """A component that would not start; the message names it and quotes its log's tail."""


@dataclass(frozen=True)
class Started:
    name: str
    pid: int
    binary: str
    log: Path


EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000  # below: ports that well-known services (etcd, databases, proxies) listen on
_ATTEMPTS = 64
_random = random.Random()  # spreads our choices over the range; nothing secret


def listen_ports(ephemeral: tuple[int, int]) -> range | None:
    """The ports to choose listeners from: the widest run outside the kernel's ephemeral range
    `ephemeral` (first, last) and above `_LOWEST`; None when there is no room for one.

    Why: a port the kernel hands out for port 0 or for an outgoing connection can be taken by
    any process the moment our component lets go of it (a crashed etcd restarted on its old
    port found it in use); ports outside that range are only ever taken by explicit choice."""
    first, last = ephemeral
    runs = [range(_LOWEST, min(first, 65_536)), range(max(last + 1, _LOWEST), 65_536)]
    widest = max(runs, key=len)
    return widest if len(widest) >= 1_000 else None


def _ephemeral_range() -> tuple[int, int]:
    try:
        first, last = EPHEMERAL_RANGE_FILE.read_text().split()
        return int(first), int(last)
    except (OSError, ValueError):
        return 32_768, 60_999  # Linux's default


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now, outside the ephemeral range."""
    [port] = free_ports(1)
    return port


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports nothing listens on now, outside the ephemeral range when
    it leaves room: each socket stays bound until all are chosen, so one call never hands out a
    port twice (separate `free_port` calls can)."""
    choices = listen_ports(_ephemeral_range())
    with contextlib.ExitStack() as held:
        socks = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            _bind(sock, choices)
        return [int(sock.getsockname()[1]) for sock in socks]


def _bind(sock: socket.socket, choices: range | None) -> None:
    if choices is not None:
        for _ in range(_ATTEMPTS):
            with contextlib.suppress(OSError):  # taken: try another
                sock.bind(("127.0.0.1", _random.choice(choices)))
                return
    sock.bind(("127.0.0.1", 0))  # no room outside, or every try taken: the kernel's choice


def start(spec: ProcessSpec, log: Path, env: dict[str, str] | None = None) -> Started:
    """Spawn `spec` detached from our session, stdout and stderr into `log`; in its network
    namespace when it names one."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as held:
        enter = None
        if spec.netns is not None:
            netns = os.open(spec.netns, os.O_RDONLY | os.O_CLOEXEC)
            held.callback(os.close, netns)
            enter = _enter_netns(netns)
        out = held.enter_context(log.open("ab"))
        # The child only makes one system call through a function loaded before the fork (no
        # lock, no import), which is what makes preexec_fn unsafe beside threads.
        proc = subprocess.Popen(
            list(spec.argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=env, preexec_fn=enter,  # noqa: PLW1509
        )
    return Started(spec.name, proc.pid, spec.argv[0], log)


_CLONE_NEWNET = 0x40000000


def _enter_netns(fd: int) -> Callable[[], None]:
    """What the child runs between fork and exec: setns(2) into the namespace open at `fd`.
    In the child, not through `nsenter` in argv: the PID is then the binary's from its exec on,
    which `alive` checks (Python 3.12's os.setns would do; this runs on 3.11)."""
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here, before the fork

    def enter() -> None:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns into the cluster's network namespace")

    return enter


# How long `alive` waits for a process in the middle of exec to show its arguments.
_EXEC_SETTLE_S = 1.0


def alive(started: Started) -> bool:
    """True while the PID runs the binary we started (not a zombie, not a recycled PID). A
    script runs as its interpreter with the script's path as the first argument."""
    try:
        exe = os.readlink(f"/proc/{started.pid}/exe").removesuffix(" (deleted)")
        stat = Path(f"/proc/{started.pid}/stat").read_text()
        argv = _argv_after_exec(started.pid)
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0] if ")" in stat else "?"
    if state in ("Z", "X"):
        return False
    binary = os.path.realpath(started.binary)
    return exe == binary or any(os.path.realpath(a.decode(errors="replace")) == binary
                                for a in argv if a)


def _argv_after_exec(pid: int) -> list[bytes]:
    """The first two arguments of `pid`. Popen returns once exec has begun, but the kernel
    fills the new arguments in a moment later: until then cmdline reads empty, which says
    nothing about whose PID it is, so wait (bounded) for them instead of guessing."""
    deadline = time.monotonic() + _EXEC_SETTLE_S
    while True:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2]
        if any(argv) or time.monotonic() >= deadline:
            return argv
        time.sleep(0.005)


def log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.rstrip().splitlines()[-lines:]) or "(empty log)"


def wait_healthy(
    started: Started, url: str, context: ssl.SSLContext | None, timeout: float, *,
    headers: dict[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic, pause: Callable[[float], None] = time.sleep,
) -> None:
    """Poll `url` until it answers 200; ComponentError if the process exits or time runs out."""
    deadline = clock() + timeout
    last = "no answer yet"
    while clock() < deadline:
        if not alive(started):
            raise ComponentError(
                f"{started.name} exited during start-up; last lines of {started.log}:\n"
                f"{log_tail(started.log)}"
            )
        try:
            request = urllib.request.Request(url, headers=headers or {})
            with urllib.request.urlopen(request, context=context, timeout=2) as response:
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
        except urllib.error.HTTPError as err:
            last = f"HTTP {err.code}"
        except OSError as err:
            last = str(getattr(err, "reason", err))
        pause(0.2)
    raise ComponentError(
        f"{started.name} not healthy at {url} within {timeout:g} s ({last}); last lines of "
        f"{started.log}:\n{log_tail(started.log)}"
    )


def stop(processes: Sequence[Started], grace: float = 10.0,
         clock: Callable[[], float] = time.monotonic,
         pause: Callable[[float], None] = time.sleep) -> list[str]:
    """SIGTERM each live process (last started first), SIGKILL after `grace`; names stopped."""
    stopped: list[str] = []
    for started in reversed(processes):
        if not _running(started):
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(started.pid, signal.SIGTERM)
        deadline = clock() + grace
        while _running(started) and clock() < deadline:
            _reap(started.pid)
            pause(0.05)
        if _running(started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(started.pid, signal.SIGKILL)
        while _running(started):
            _reap(started.pid)
            pause(0.05)
        _reap(started.pid)
        stopped.append(started.name)
    return stopped


def kill(started: Started, pause: Callable[[float], None] = time.sleep) -> None:
    """SIGKILL a live process we started and wait until it is gone (a crash, for tests)."""
    if not _running(started):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(started.pid, signal.SIGKILL)
    while _running(started):
        _reap(started.pid)
        pause(0.02)
    _reap(started.pid)


def _running(started: Started) -> bool:
    return alive(started) or _threads_left(started.pid)


def _threads_left(pid: int) -> bool:
    """True while a process whose main thread already exited still has other threads.

    `alive` is False as soon as the main thread is a zombie, but a multi-threaded process
    (every Go binary) closes its files only when its last thread exits: until then its listening
    socket holds the port, and a restart that binds it fails ("address already in use", as the
    chaos tier's kube-apiserver restart once did)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        threads = len(os.listdir(f"/proc/{pid}/task"))
    except OSError:  # reaped: nothing left
        return False
    return stat.rsplit(")", 1)[-1].split()[0] == "Z" and threads > 1


def _reap(pid: int) -> None:
    """Collect our own child's exit status so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
