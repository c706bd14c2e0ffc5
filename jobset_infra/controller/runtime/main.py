"""`jobset-controller`: the console script the controller image runs.

    jobset-controller --config=/etc/jobset-controller/config.yaml
    jobset-controller --kubeconfig ~/.kube/config --leader-elect=false

Exit codes: 0 after SIGTERM/SIGINT (graceful: workers stop, the Lease is released), 1 when the
Lease is lost (the Deployment restarts us as a standby), 2 for a configuration error.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Sequence

from jobset_infra.api.controller_config import ControllerConfig, ControllerConfigError
from jobset_infra.api.controller_flags import parse_config
from jobset_infra.controller.runtime import logs
from jobset_infra.controller.runtime.auth import AuthError
from jobset_infra.controller.runtime.manager import CacheSyncTimeoutError, start_controller

log = logging.getLogger("jobset_infra.controller")

EXIT_OK = 0
EXIT_LOST_LEASE = 1
EXIT_CONFIG = 2


def main(argv: Sequence[str] | None = None) -> int:
    try:
        config, args = parse_config(sys.argv[1:] if argv is None else argv)
    except ControllerConfigError as err:
        print(f"jobset-controller: {err}", file=sys.stderr)
        return EXIT_CONFIG
    logs.configure(config.logging.level, config.logging.format)
    for section in config.ignored_upstream_sections():
        log.warning("config section %r is accepted for compatibility and ignored", section)
    try:
        return asyncio.run(serve(config, kubeconfig=args.kubeconfig, url=args.master))
    except (AuthError, CacheSyncTimeoutError) as err:
        log.error("%s", err)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return EXIT_OK


async def serve(
    config: ControllerConfig, kubeconfig: str | None = None, url: str | None = None
) -> int:
    """Run until a signal (0) or a lost Lease (1)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    stopped = asyncio.create_task(stop.wait())
    # A signal while the caches sync (API server unreachable, RBAC missing) must still stop us
    # at once, not after the cache-sync timeout: the kubelet's grace period is shorter.
    starting = asyncio.create_task(start_controller(config, kubeconfig=kubeconfig, url=url,
                                                    freeze_gc=True))
    await asyncio.wait({stopped, starting}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        log.info("stopped before the caches synced")
        return EXIT_OK
    ctl = starting.result()
    log.info("started", extra={"identity": ctl.identity, "ports": ctl.ports})
    lost = asyncio.create_task(ctl.lost.wait())
    await asyncio.wait({stopped, lost}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    lost.cancel()
    if ctl.lost.is_set():
        await ctl.stop(release=False)
        return EXIT_LOST_LEASE
    log.info("shutting down")
    await ctl.stop(release=True)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
