"""Starting, watching and stopping the cluster's processes (cluster/processes.py)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from jobset_infra.cluster.layout import ProcessSpec
from jobset_infra.cluster.processes import (
    ComponentError,
    Started,
    alive,
    free_port,
    free_ports,
    kill,
    listen_ports,
    start,
    stop,
    wait_healthy,
)
from tests.waiting import until_sync

SLEEP = shutil.which("sleep") or "/bin/sleep"


def script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


# A process whose main thread has exited (a zombie to /proc) while another thread still holds
# its listening socket: what a killed Go binary is for a moment before its last thread ends.
_MAIN_THREAD_GONE = """
import ctypes, socket, sys, threading, time
listener = socket.socket()
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen()
threading.Thread(target=time.sleep, args=(600,)).start()
ctypes.CDLL(None).pthread_exit(None)
"""


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize("end", [pytest.param(kill, id="killed"),
                                 pytest.param(lambda p: stop([p], grace=0.5), id="stopped")])
def test_a_process_is_ended_only_once_its_last_thread_let_go_of_its_port(
    tmp_path: Path, end: Callable[[Started], object]
) -> None:
    path = tmp_path / "main_thread_gone.py"
    path.write_text(_MAIN_THREAD_GONE)
    port = free_port()
    started = start(ProcessSpec("holder", (sys.executable, str(path), str(port)), ""),
                    tmp_path / "log")
    until_sync(lambda: not _bindable(port) and not alive(started),
               "the main thread gone, the port still held")
    end(started)
    assert _bindable(port)


def test_a_started_process_is_alive_until_stopped(tmp_path: Path) -> None:
    started = start(ProcessSpec("sleeper", (SLEEP, "60"), ""), tmp_path / "log")
    assert alive(started)
    assert stop([started]) == ["sleeper"]
    assert not alive(started)


def test_a_pid_running_another_binary_is_not_ours(tmp_path: Path) -> None:
    started = start(ProcessSpec("sleeper", (SLEEP, "60"), ""), tmp_path / "log")
    try:
        impostor = Started("etcd", started.pid, "/usr/local/bin/etcd", tmp_path / "log")
        assert not alive(impostor)
        assert stop([impostor]) == []  # never signalled
        assert alive(started)
    finally:
        stop([started])


def test_a_process_just_started_is_told_apart_from_an_impostor(tmp_path: Path) -> None:
    """Right after Popen returns, the kernel may not have filled in the new arguments yet
    (cmdline reads empty): that moment once passed any binary off as ours (a CI failure)."""
    for attempt in range(20):
        started = start(ProcessSpec("sleeper", (SLEEP, "60"), ""), tmp_path / f"log{attempt}")
        try:
            impostor = Started("etcd", started.pid, "/usr/local/bin/etcd", started.log)
            assert not alive(impostor), f"attempt {attempt}"
            assert alive(started), f"attempt {attempt}"
        finally:
            stop([started])


def test_a_script_is_recognised_by_its_path(tmp_path: Path) -> None:
    """A wrapper script (a user's KUBEBUILDER_ASSETS may hold one) runs as its interpreter."""
    path = script(tmp_path, "server", f"while true; do {SLEEP} 1; done")
    started = start(ProcessSpec("server", (str(path),), ""), tmp_path / "log")
    try:
        assert alive(started)
    finally:
        assert stop([started]) == ["server"]
    assert not alive(started)


def test_a_component_that_exits_is_reported_with_its_log_tail(tmp_path: Path) -> None:
    path = script(tmp_path, "etcd", "echo 'listen tcp 127.0.0.1:2379: bind: address already in "
                                    "use' >&2; exit 1")
    started = start(ProcessSpec("etcd", (str(path),), ""), tmp_path / "etcd.log")
    with pytest.raises(ComponentError) as err:
        wait_healthy(started, f"http://127.0.0.1:{free_port()}/health", None, timeout=20)
    assert "etcd exited during start-up" in str(err.value)
    assert "address already in use" in str(err.value)


def test_a_component_that_never_answers_times_out_naming_it(tmp_path: Path) -> None:
    started = start(ProcessSpec("kwok", (SLEEP, "60"), ""), tmp_path / "kwok.log")
    try:
        with pytest.raises(ComponentError) as err:
            wait_healthy(started, f"http://127.0.0.1:{free_port()}/healthz", None, timeout=0.5)
        assert "kwok not healthy" in str(err.value)
    finally:
        stop([started])


def test_free_ports_are_distinct_within_one_call() -> None:
    for _ in range(50):
        ports = free_ports(16)
        assert len(set(ports)) == 16


@pytest.mark.parametrize(("ephemeral", "expected"), [
    pytest.param((32_768, 60_999), range(10_000, 32_768), id="Linux's default: below it"),
    pytest.param((1_024, 20_000), range(20_001, 65_536), id="a low range: above it"),
    pytest.param((10_000, 64_999), None,
                 id="no run of a thousand ports outside: none"),
    pytest.param((40_000, 39_999), range(10_000, 40_000), id="an empty range: the wider side"),
])
def test_listeners_are_chosen_outside_the_ephemeral_range(
        ephemeral: tuple[int, int], expected: range | None) -> None:
    assert listen_ports(ephemeral) == expected


def test_free_ports_on_this_machine_are_outside_its_ephemeral_range() -> None:
    first, last = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    assert listen_ports((first, last)) is not None  # else the kernel chooses (test vacuous)
    assert not [p for p in free_ports(64) if first <= p <= last]
    assert not first <= free_port() <= last


@pytest.mark.skipif(shutil.which("ip") is None or os.geteuid() != 0,
                    reason="network namespaces need root and iproute2")
def test_a_process_of_a_real_node_cluster_runs_in_its_network_namespace(tmp_path: Path) -> None:
    name = f"jsi-test-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        started = start(ProcessSpec("sleeper", (SLEEP, "30"), "", f"/run/netns/{name}"),
                        tmp_path / "log")
        try:
            assert alive(started)  # the binary's PID from its exec on: no wrapper in between
            assert os.stat(f"/proc/{started.pid}/ns/net").st_ino == \
                os.stat(f"/run/netns/{name}").st_ino
            assert os.stat(f"/proc/{os.getpid()}/ns/net").st_ino != \
                os.stat(f"/run/netns/{name}").st_ino
        finally:
            stop([started])
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)
