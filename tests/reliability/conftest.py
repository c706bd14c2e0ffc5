"""Fixtures shared by the reliability tier's sim tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from jobset_infra.sim.apiserver.server import Sim
from tests.reliability.chaos import started_sim


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    """A bare sim serving the JobSet CRD (no Nodes, no Job controller)."""
    server = await started_sim()
    try:
        yield server
    finally:
        await server.stop()
