"""README's examples are real: the Python program constructs under Pulumi's mocks, and the
laptop quickstart runs against the sim, as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobset_infra.plan.offline import run_offline

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


def section_blocks(title: str) -> list[str]:
    """The ```sh blocks of the README section headed `### <title>`."""
    section = README.read_text().split(f"### {title}\n", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)


@pytest.mark.slow
def test_the_laptop_quickstart_runs_a_jobset_through_a_failure_to_completed(
    tmp_path: Path,
) -> None:
    """Both blocks as written, with the venv's bin folder and a private kubeconfig path."""
    import json
    import signal
    import subprocess
    import sys

    serve, use = section_blocks("Try JobSets on a laptop")
    bin_dir, kubeconfig = Path(sys.executable).parent, tmp_path / "sim.kubeconfig"

    def local(text: str) -> str:
        text = text.replace("$PWD/sim.kubeconfig", "sim.kubeconfig")
        return text.replace("sim.kubeconfig", str(kubeconfig)).replace(".venv/bin/", f"{bin_dir}/")

    root = README.parent
    sim = subprocess.Popen(["bash", "-c", f"exec {local(serve).strip()}"], cwd=root,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert sim.stdout is not None
        banner: list[str] = []
        while not banner or (banner[-1] and not banner[-1].startswith("Press Ctrl-C")):
            banner.append(sim.stdout.readline())  # "" once the process has ended
        assert banner[-1].startswith("Press Ctrl-C"), (banner, sim.stderr.read())
        assert f"  export KUBECONFIG={kubeconfig}\n" in banner
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", local(use)], cwd=root,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "jobset.jobset.x-k8s.io/pytorch-ddp condition met" in done.stdout
        jobset = json.loads(subprocess.run(
            [str(bin_dir / "kubectl"), f"--kubeconfig={kubeconfig}", "get", "jobset",
             "pytorch-ddp", "-o", "json"], capture_output=True, text=True, check=True,
            timeout=30).stdout)
        assert jobset["status"]["restarts"] == 1  # the deleted pod failed the first attempt
        assert jobset["status"]["terminalState"] == "Completed"
    finally:
        sim.send_signal(signal.SIGINT)
        sim.communicate(timeout=15)
    assert sim.returncode == 0


def test_the_readme_test_command_is_the_full_suite_ci_runs() -> None:
    """`make test-fast` is the shortcut; the README's command stays the one CI runs, whole."""
    import tomllib

    root = README.parent
    [command] = section_blocks_after("Run the tests")
    assert command.strip() == ".venv/bin/pytest -q -n 2"
    assert command.strip() in (root / ".ci" / "run").read_text().splitlines()
    fast = re.search(r"^test-fast:.*\n\t(.*)$", (root / "Makefile").read_text(), re.MULTILINE)
    assert fast is not None and fast[1] == '$(BIN)/pytest -q -m "not slow"'
    options = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["pytest"]
    assert "--durations=15" in options["ini_options"]["addopts"].split()


def section_blocks_after(text: str) -> list[str]:
    """The first ```sh block after the README line starting with `text`."""
    after = README.read_text().split(f"\n{text}", 1)[1]
    return re.findall(r"```sh\n(.*?)```", after, flags=re.DOTALL)[:1]
