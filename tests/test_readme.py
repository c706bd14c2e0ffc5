"""README's Python example is real: it constructs under Pulumi's mocks as written."""

from __future__ import annotations

import re
from pathlib import Path

from jobset_infra.components.offline import run_offline

README = Path(__file__).parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_the_readme_program_builds_the_platform_and_a_jobset(tmp_path: Path) -> None:
    [block] = python_blocks()
    program = tmp_path / "__main__.py"
    program.write_text(block)

    run = run_offline(program, stack="readme")

    pools = run.of_type("gcp:container/nodePool:NodePool")
    tpu_pools = [p for p in pools if p.inputs["nodeConfig"]["machineType"] == "ct5lp-hightpu-4t"]
    assert len(tpu_pools) == 4
    [jobset] = [
        r for r in run.registrations
        if r.type.startswith("kubernetes:") and r.inputs.get("kind") == "JobSet"
    ]
    replicated = jobset.inputs["spec"]["replicatedJobs"][0]
    assert replicated["replicas"] == 4
    assert replicated["template"]["spec"]["parallelism"] == 2
