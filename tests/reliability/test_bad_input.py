"""Bad input at every entry point is accepted or refused with a clear message, never a traceback.

Inputs are valid documents with one or two values replaced by junk or deleted (`garbage.mutated`),
drawn by hypothesis under the fixed-seed "ci" profile:

- the sim's CRD admission (what `kubectl apply` meets): a refusal is a 400/422 Status with a
  message, never a crash; and whatever `jobset-infra validate` accepts, the API server accepts;
- the JobSet Pulumi component's validation (`plan_workload`, run before anything registers):
  a WorkloadError with one line per problem, or a manifest that `validate` accepts;
- stack configuration (`load_stack_config`, what `jobset-infra plan` and `pulumi preview` run):
  a StackConfigError whose every line names a `jobset-infra:` key, or a valid config;
- `jobset-infra plan` itself on a few mutated stacks: exit code 0 or 1, no traceback, one
  `error:` line per problem.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from jobset_infra.api import constants as c
from jobset_infra.api.check import check_jobset
from jobset_infra.cli import main
from jobset_infra.manifests.workload import WorkloadError, WorkloadSpec, plan_workload
from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import NAMESPACES, Store
from jobset_infra.stack.config import StackConfigError, load_stack_config
from tests.api.strategies import jobset_manifests
from tests.reliability.chaos import CRD_FILE, CRDS
from tests.reliability.garbage import mutated

ROOT = Path(__file__).parents[2]
JOBSETS = GVR(c.GROUP, c.VERSION, c.PLURAL)
STACKS = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))


@functools.cache
def crd_store() -> Store:
    """A store serving our CRD (compiling its schema and CEL rules once: about a second)."""
    store = Store()
    store.create(CRDS, yaml.safe_load(CRD_FILE.read_text()))
    store.create(NAMESPACES, {"metadata": {"name": "ns"}})
    return store


def admission(manifest: Any) -> StatusError | None:
    """The sim's answer to creating `manifest` (dry run: nothing is stored)."""
    try:
        crd_store().create(JOBSETS, manifest, "ns", dry_run=True)
    except StatusError as err:
        return err
    return None


bad_jobsets = jobset_manifests(with_status=False).flatmap(mutated)


@given(manifest=bad_jobsets)
@pytest.mark.slow
def test_the_api_server_refuses_with_a_status_and_accepts_what_validate_accepts(
    manifest: Any,
) -> None:
    refused = admission(manifest)
    if refused is not None:
        assert refused.code in (400, 422), f"{refused.code} {refused.reason}: {refused.message}"
        assert refused.message.strip()
    verdict = check_jobset(manifest)
    if verdict.ok:
        assert refused is None, f"validate accepts it but the API server refuses: {refused}"
    else:
        assert all(e.message for e in verdict.errors)


@pytest.mark.parametrize(
    "metadata",
    [
        pytest.param(True, id="metadata that is a boolean"),
        pytest.param(["x"], id="metadata that is a list"),
        pytest.param("x", id="metadata that is a string"),
    ],
)
def test_a_wrong_kind_with_malformed_metadata_is_refused_not_crashed(metadata: Any) -> None:
    # Found by the property above: the kind check read the name from metadata before the
    # body's metadata was decoded, and crashed on a boolean.
    refused = admission({"apiVersion": f"{c.GROUP}/{c.VERSION}", "kind": True,
                         "metadata": metadata, "spec": {}})
    assert refused is not None and refused.code in (400, 422), refused


@settings(max_examples=30)
@given(manifest=bad_jobsets)
def test_validate_exits_0_or_1_with_a_line_per_problem(
    tmp_path_factory: pytest.TempPathFactory, manifest: Any
) -> None:
    path = tmp_path_factory.mktemp("validate") / "jobset.yaml"
    path.write_text(yaml.safe_dump(manifest))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", str(path)])
    text = out.getvalue() + err.getvalue()
    assert code == (0 if check_jobset(manifest).ok else 1), text
    assert "Traceback" not in text
    if code == 1:
        where = f"{path} (document 1): "
        assert [line for line in text.splitlines() if line.startswith(where)], text


def workload_spec(manifest: dict[str, Any]) -> WorkloadSpec:
    found = manifest.get("spec")
    spec: dict[str, Any] = found if isinstance(found, dict) else {}
    rjobs = spec.get("replicatedJobs")
    jobs: list[Any] = rjobs if isinstance(rjobs, list) else [rjobs]
    return WorkloadSpec(
        name="train",
        namespace="team-a",
        replicated_jobs=jobs,
        failure_policy=spec.get("failurePolicy"),
        success_policy=spec.get("successPolicy"),
        network=spec.get("network"),
        ttl_seconds_after_finished=spec.get("ttlSecondsAfterFinished"),
    )


@given(manifest=bad_jobsets)
@pytest.mark.slow
def test_the_jobset_component_refuses_with_one_line_per_problem(manifest: dict[str, Any]) -> None:
    try:
        plan = plan_workload(workload_spec(manifest))
    except WorkloadError as err:
        assert err.problems and all(p.strip() and "\n" not in p for p in err.problems)
        return
    verdict = check_jobset(plan.manifest)
    assert verdict.ok, f"the component accepted what validate refuses: {verdict.errors}"


def stack_config(path: Path) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(path.read_text())["config"]
    return config


def as_pulumi_hands_it(config: dict[str, Any]) -> dict[str, str]:
    """Pulumi gives a program strings: structured values as JSON text."""
    return {
        key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()
    }


bad_stack_configs = st.sampled_from(STACKS).map(stack_config).flatmap(mutated)


@given(config=bad_stack_configs)
def test_stack_config_problems_each_name_their_key(config: dict[str, Any]) -> None:
    try:
        load_stack_config(as_pulumi_hands_it(config))
    except StackConfigError as err:
        assert err.problems
        for line in err.problems:
            assert line.startswith("jobset-infra:"), line
            assert ": " in line and "\n" not in line, line
            assert "Traceback" not in line and "object at 0x" not in line, line


def project(tmp: Path, config: dict[str, Any]) -> Path:
    (tmp / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp / "stacks").mkdir(exist_ok=True)
    (tmp / "stacks" / "__main__.py").write_text((ROOT / "stacks" / "__main__.py").read_text())
    (tmp / "stacks" / "Pulumi.fuzz.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp


@settings(max_examples=5)  # each is a whole offline Pulumi run
@given(config=bad_stack_configs)
def test_plan_exits_1_with_error_lines_or_plans(
    tmp_path_factory: pytest.TempPathFactory, config: dict[str, Any]
) -> None:
    root = project(tmp_path_factory.mktemp("plan"), config)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", "--stack", "fuzz", "--project-dir", str(root)])
    text = err.getvalue()
    assert code in (0, 1), text
    assert "Traceback" not in text + out.getvalue()
    if code == 1:
        assert [line for line in text.splitlines() if line.startswith("error: ")], text


@pytest.mark.parametrize(
    "job",
    [
        pytest.param(None, id="None instead of a replicated job is named, not a TypeError"),
        pytest.param("w", id="a string instead of a replicated job is named, not a ValueError"),
    ],
)
def test_a_replicated_job_of_the_wrong_type_is_named(job: Any) -> None:
    with pytest.raises(WorkloadError) as caught:
        plan_workload(WorkloadSpec(name="train", namespace="team-a", replicated_jobs=[job]))
    assert caught.value.problems[0].startswith("replicated_jobs[0]: ")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("success_policy", [], id="a success policy given as a list is named"),
        pytest.param("failure_policy", "3", id="a failure policy given as text is named"),
        pytest.param("network", 1, id="a network given as a number is named"),
    ],
)
def test_a_policy_of_the_wrong_type_is_named(field: str, value: Any) -> None:
    job = {"name": "w", "template": {"spec": {"template": {"spec": {"containers": []}}}}}
    spec = WorkloadSpec(name="train", namespace="team-a", replicated_jobs=[job])
    with pytest.raises(WorkloadError) as caught:
        plan_workload(dataclasses.replace(spec, **{field: value}))
    assert [p for p in caught.value.problems if p.startswith(f"{field}: ")], caught.value.problems
