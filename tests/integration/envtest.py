"""envtest's shape of the real API server: etcd and kube-apiserver only, from `make tools`.

No controller-manager runs, so there is no Job controller and no garbage collector; the tests
set Job status by hand and finish foreground deletions themselves, as upstream's envtest
suite does. Authentication is the cluster's admin client certificate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def wait_established(check: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    """Poll an async predicate until it returns True (CRD Established)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.1)
    raise TimeoutError("CRD not established")
