"""`python -m tests.reliability.sim_process PORT_FILE`: a sim with our CRD in its own process (so
its peak RSS can be measured), serving until stdin closes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.command import register_crd


async def main(port_file: Path) -> None:
    sim = Sim(port=0)
    await sim.start()
    register_crd(sim.store)
    port_file.write_text(str(sim.port))
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the test closes our stdin
    await sim.stop()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
