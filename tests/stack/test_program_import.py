"""What importing the stack program costs: every `pulumi preview/up/destroy` and every `plan`
runs it in a fresh interpreter, so its imports are paid once per engine operation."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.unit]

# pulumi_gcp's resource submodules are the heavy part of the GCP SDK (compute's input and output
# types alone took 3.9 s of import); a local stack never creates a GCP resource, and a GKE stack
# loads them when its components create one.
# pulumi_gcp names each of them in sys.modules as a lazy module at once; one is loaded when its
# own modules (`pulumi_gcp.compute._inputs`, ...) are.
HEAVY_GCP = tuple(f"pulumi_gcp.{name}." for name in (
    "compute", "container", "projects", "serviceaccount", "artifactregistry"))


def test_importing_the_stack_program_loads_no_gcp_resource_module() -> None:
    probe = ("import json, sys; import jobset_infra.stack.program; "
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pulumi_gcp.'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, check=True)
    loaded = json.loads(out.stdout)
    assert [m for m in loaded if m.startswith(HEAVY_GCP)] == []
