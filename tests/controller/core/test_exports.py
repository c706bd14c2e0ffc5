"""Every core module declares its public API: `__all__` lists exactly its public definitions."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from jobset_infra.controller import core

# exclusive_placement is the placement engineer's step (tested in tests/placement)
MODULES = sorted(
    m.name for m in pkgutil.iter_modules(core.__path__) if m.name != "exclusive_placement"
)


@pytest.mark.parametrize("name", [pytest.param(m, id=m) for m in MODULES])
def test_all_matches_public_definitions(name: str) -> None:
    module = importlib.import_module(f"jobset_infra.controller.core.{name}")
    exported = set(module.__all__)
    assert all(hasattr(module, n) for n in exported)
    defined = {
        n
        for n, obj in vars(module).items()
        if not n.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == module.__name__
    }
    assert defined <= exported, f"public but not exported: {sorted(defined - exported)}"


def test_core_does_no_io_and_reads_no_clock() -> None:
    """The core is pure: no asyncio, no HTTP clients, no clock or randomness."""
    forbidden = (
        "import asyncio",
        "aiohttp",
        "import kubernetes",
        "datetime.now(",
        "utcnow(",
        "time.time(",
        "monotonic(",
        "import random",
        "os.environ",
    )
    for name in MODULES:
        source = inspect.getsource(importlib.import_module(f"jobset_infra.controller.core.{name}"))
        assert not [f for f in forbidden if f in source], name
