"""`jobset-infra validate`: problem lines, exit codes, and no traceback whatever the input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api.features import FeatureGates
from jobset_infra.cli import main
from jobset_infra.testing.jobsets import make_jobset
from jobset_infra.validate_command import check_text, parse_feature_gates


def _yaml(*documents: Any) -> bytes:
    return yaml.safe_dump_all(documents).encode()


def _valid() -> dict[str, Any]:
    return make_jobset("js", "ns").replicated_job("w", replicas=2).obj()


def test_valid_jobset_has_no_problems() -> None:
    assert check_text("f.yaml", _yaml(_valid())) == []


def test_problems_name_file_document_and_field() -> None:
    bad = _valid()
    bad["spec"]["replicatedJobs"][0]["replicas"] = -1
    lines = check_text("f.yaml", _yaml(_valid(), bad))
    assert lines == [
        "f.yaml (document 2): spec.replicatedJobs[0].replicas: Invalid value: -1: "
        "spec.replicatedJobs[0].replicas in body should be greater than or equal to 0"
    ]


@pytest.mark.parametrize(
    ("data", "want"),
    [
        pytest.param(b"", "f: no YAML documents (empty input)", id="empty file"),
        pytest.param(b"a: [", "f: not valid YAML", id="not YAML"),
        pytest.param(b"\x00\x01\x02", "f: binary data", id="binary"),
        pytest.param(b"\xff\xfe\xfa", "f: not UTF-8 text", id="not UTF-8"),
        pytest.param(b"- 1\n- 2\n", "f (document 1): <document>: a manifest must be a mapping",
                     id="a list"),
        pytest.param(b"apiVersion: v1\nkind: Widget\n", "f (document 1): kind: 'Widget'",
                     id="unknown kind"),
        pytest.param(
            b"apiVersion: jobset.x-k8s.io/v1alpha2\nkind: Job\n",
            "f (document 1): kind: not a JobSet",
            id="JobSet group with the wrong kind",
        ),
        pytest.param(b"!!python/object:os.system {}", "f: not valid YAML", id="unsafe YAML tag"),
    ],
)
def test_bad_input_is_reported(data: bytes, want: str) -> None:
    lines = check_text("f", data)
    assert any(line.startswith(want) for line in lines), lines


def test_huge_numbers_are_reported_not_crashing() -> None:
    bad = _valid()
    bad["spec"]["replicatedJobs"][0]["replicas"] = 10**30
    bad["spec"]["ttlSecondsAfterFinished"] = -(10**30)
    lines = check_text("f", json.dumps(bad).encode())
    assert any("spec.replicatedJobs[0].replicas" in line for line in lines)
    assert any("spec.ttlSecondsAfterFinished" in line for line in lines)


def test_other_builtin_kinds_are_checked_against_the_pinned_openapi() -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spek": {}}
    assert check_text("f", _yaml(namespace)) == ['f (document 1): spek: unknown field "spek"']


def test_feature_gates_flag() -> None:
    assert parse_feature_gates("RestartJob=true, ElasticJobSet=false") == FeatureGates.of({
        "RestartJob": True,
        "ElasticJobSet": False,
    })
    assert "unknown feature gate" in str(parse_feature_gates("Nope=true"))
    assert "must look like Name=true or Name=false" in str(parse_feature_gates("RestartJob"))
    jobset = make_jobset("js").replicated_job("w").rule("RestartJob", "r").obj()
    assert check_text("f", _yaml(jobset)) != []
    assert check_text("f", _yaml(jobset), FeatureGates.of({"RestartJob": True})) == []


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_bytes(_yaml(_valid()))
    bad.write_bytes(b"kind: [")
    assert main(["validate", str(good)]) == 0
    assert main(["validate", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{bad}: not valid YAML")
    assert main(["validate", "--feature-gates", "x", str(good)]) == 2


def test_the_location_of_a_problem_cannot_be_read_as_a_line_number() -> None:
    """`f:1:` read as "line 1" to editors and people; the document number is spelled out."""
    bad = _valid()
    bad["spec"]["replicatedJobs"][0]["replicas"] = -1
    [line] = check_text("f.yaml", _yaml(bad))
    assert line.startswith("f.yaml (document 1): spec.replicatedJobs[0].replicas: ")
    assert not line.startswith("f.yaml:1")


def test_a_directory_stands_for_the_manifest_files_directly_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _valid()
    bad["spec"]["replicatedJobs"][0]["replicas"] = -1
    (tmp_path / "a.yaml").write_bytes(_yaml(_valid()))
    (tmp_path / "b.yml").write_bytes(_yaml(bad))
    (tmp_path / "c.json").write_text(json.dumps(_valid()))
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "d.yaml").write_bytes(_yaml(bad))  # not entered, as kubectl -f DIR
    assert main(["validate", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"{tmp_path / 'b.yml'} (document 1): spec.replicatedJobs[0].replicas: Invalid value: -1: "
        "spec.replicatedJobs[0].replicas in body should be greater than or equal to 0"
    ]
    assert "checked 3 document(s): 1 problem" in captured.err


@pytest.mark.parametrize(
    ("layout", "hint"),
    [
        pytest.param({}, "pass the manifest files", id="an empty directory"),
        pytest.param({"team/jobset.yaml": "kind: JobSet"}, "pass the manifest files, e.g. ",
                     id="manifests only in subdirectories get an example glob"),
    ],
)
def test_a_directory_without_manifests_says_to_pass_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: dict[str, str], hint: str
) -> None:
    for relative, text in layout.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    assert main(["validate", str(tmp_path)]) == 1
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{tmp_path}: a directory with no .yaml, .yml, .json files in it")
    assert hint in line and "Is a directory" not in line
    if layout:
        assert line.endswith(str(tmp_path / "*" / "*.yaml"))


@pytest.mark.slow
def test_stdin_is_read_with_dash() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "jobset_infra.cli", "validate", "-"],
        input=_yaml(_valid()),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr


json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
spec_keys = st.sampled_from(
    [
        "replicatedJobs",
        "network",
        "successPolicy",
        "failurePolicy",
        "startupPolicy",
        "suspend",
        "coordinator",
        "managedBy",
        "ttlSecondsAfterFinished",
        "volumeClaimPolicies",
        "other",
    ]
)


@given(spec=st.dictionaries(spec_keys, json_value, max_size=4))
def test_garbage_jobset_specs_never_raise(spec: dict[str, Any]) -> None:
    manifest = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": spec,
    }
    lines = check_text("f", json.dumps(manifest).encode())
    assert all(line.startswith("f") and "internal error" not in line for line in lines)


rjob_keys = st.sampled_from(["name", "replicas", "groupName", "template", "dependsOn", "x"])


@given(rjob=st.dictionaries(rjob_keys, json_value, max_size=4))
def test_garbage_replicated_jobs_never_raise(rjob: dict[str, Any]) -> None:
    manifest = _valid()
    manifest["spec"]["replicatedJobs"].append(rjob)
    lines = check_text("f", json.dumps(manifest).encode())
    assert lines, "a garbage replicated job must be reported"
    assert not [line for line in lines if "internal error" in line]


@given(data=st.binary(max_size=200))
def test_random_bytes_never_raise(data: bytes) -> None:
    lines = check_text("f", data)
    assert all(line.startswith("f") and "internal error" not in line for line in lines)


@pytest.mark.parametrize(
    ("mutate", "want"),
    [
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"][0].update(replicas=0),
            None,
            id="zero replicated job replicas are accepted",
        ),
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"].append(
                {
                    **m["spec"]["replicatedJobs"][0],
                    "name": "b",
                    "dependsOn": [{"name": "w", "status": "Failed"}],
                }
            ),
            'spec.replicatedJobs[1].dependsOn[0].status: Unsupported value: "Failed"',
            id="dependsOn status must be Ready or Complete",
        ),
        pytest.param(
            lambda m: m["spec"].update(volumeClaimPolicies=[{"templates": []}] * 51),
            "spec.volumeClaimPolicies: Too many: 51: must have at most 50 items",
            id="more than 50 volume claim policies are rejected",
        ),
        pytest.param(
            lambda m: m["spec"].update(
                volumeClaimPolicies=[
                    {"templates": [{"metadata": {"name": f"v{i}"}, "spec": {}} for i in range(51)]}
                ]
            ),
            "spec.volumeClaimPolicies[0].templates: Too many: 51: must have at most 50 items",
            id="more than 50 volume claim templates are rejected",
        ),
    ],
)
def test_upstream_webhook_suite_cases(mutate: Any, want: str | None) -> None:
    manifest = _valid()
    mutate(manifest)
    lines = check_text("f", json.dumps(manifest).encode())
    if want is None:
        assert lines == []
    else:
        assert any(want in line for line in lines), lines


def test_old_file_turns_matching_jobsets_into_updates(tmp_path: Path) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_bytes(_yaml(_valid()))
    changed = _valid()
    changed["spec"]["replicatedJobs"][0]["replicas"] = 5
    new.write_bytes(_yaml(changed))
    assert main(["validate", str(new)]) == 0
    assert main(["validate", "--old", str(old), str(new)]) == 1
    assert main(["validate", "--old", str(tmp_path / "missing.yaml"), str(new)]) == 2
    suspended = _valid()
    suspended["spec"]["suspend"] = True
    suspended["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"] = {
        "labels": {"kueue.x-k8s.io/podset": "w"}
    }
    assert check_text("f", _yaml(suspended), old={("ns", "js"): _valid()}) == []


def _cluster_queue(**spec: Any) -> dict[str, Any]:
    quota = {"name": "google.com/tpu", "nominalQuota": "32"}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "tpu"},
            "spec": {"namespaceSelector": {},
                     "resourceGroups": [{"coveredResources": ["google.com/tpu"],
                                         "flavors": [{"name": "v5e", "resources": [quota]}]}],
                     **spec}}


@pytest.mark.parametrize(
    ("manifest", "want"),
    [
        pytest.param(_cluster_queue(), [], id="a ClusterQueue as plan writes it is valid"),
        pytest.param(
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
             "metadata": {"name": "high"}, "value": 1000}, [],
            id="a WorkloadPriorityClass with its top-level value is valid"),
        pytest.param(_cluster_queue(cohort="old"),
                     ['f (document 1): spec.cohort: unknown field "spec.cohort"'],
                     id="a v1beta1 field in a v1beta2 object is an unknown field"),
        pytest.param(_cluster_queue(queueingStrategy="Random"),
                     ['f (document 1): spec.queueingStrategy: Unsupported value: "Random": '
                      'supported values: "StrictFIFO", "BestEffortFIFO"',
                      "f (document 1): <document>: Invalid value: null: some validation rules "
                      "were not checked because the object was invalid; correct the existing "
                      "errors to complete validation"],
                     id="an enum value Kueue does not have is refused, as the API server does"),
        pytest.param({**_cluster_queue(), "apiVersion": "kueue.x-k8s.io/v1alpha9"},
                     ["f (document 1): apiVersion: Kueue serves ClusterQueue as "
                      "kueue.x-k8s.io/v1beta1, kueue.x-k8s.io/v1beta2, not 'v1alpha9'"],
                     id="a version Kueue does not serve is named"),
    ],
)
def test_kueue_kinds_are_checked_against_kueues_own_crds(
    manifest: dict[str, Any], want: list[str]
) -> None:
    assert check_text("f", _yaml(manifest)) == want


def test_json_output_lists_every_problem_with_file_document_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _valid()
    bad["spec"]["replicatedJobs"][0]["replicas"] = -1
    path = tmp_path / "f.yaml"
    path.write_bytes(_yaml(_valid(), bad, _cluster_queue(cohort="old")))
    assert main(["validate", "-o", "json", str(path)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False and report["documents"] == 3
    assert [(p["document"], p["field"]) for p in report["problems"]] == [
        (2, "spec.replicatedJobs[0].replicas"), (3, "spec.cohort")]
    assert all(p["file"] == str(path) for p in report["problems"])
    path.write_bytes(_yaml(_valid()))
    assert main(["validate", "-o", "json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"valid": True, "documents": 1, "problems": []}


def test_only_the_commands_own_process_settles_its_heap(tmp_path: Path) -> None:
    """`run` freezes the heap once the checking modules are loaded (the CEL trees' unpickling
    then no longer sets off collections over it); `check_text` never touches a caller's."""
    import gc

    before = gc.get_freeze_count()
    assert check_text("x.yaml", _yaml(_valid())) == []
    assert gc.get_freeze_count() == before
    path = tmp_path / "jobset.yaml"
    path.write_bytes(_yaml(_valid()))
    probe = ("import gc, sys\nfrom jobset_infra.cli import main\n"
             "try:\n    main(['validate', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
             "print('FROZEN', gc.get_freeze_count())\n")
    done = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True,
                          text=True, timeout=120, check=True)
    frozen = int(done.stdout.rsplit("FROZEN ", 1)[1])
    assert frozen > 10_000  # the models, schemas and rules


_COUNT_METADATA_SCANS = """
import importlib.metadata, os, sys
scans = []
real = importlib.metadata.distributions
importlib.metadata.distributions = lambda *a, **k: scans.append(1) or real(*a, **k)
from jobset_infra.cli import main
before = os.environ.get("PYDANTIC_DISABLE_PLUGINS")
code = main(["validate", sys.argv[1]])
assert os.environ.get("PYDANTIC_DISABLE_PLUGINS") == before, "the caller's environment changed"
print(len(scans), code)
"""


@pytest.mark.parametrize(("setting", "scans"), [
    pytest.param(None, 0, id="validate reads no distribution's metadata for pydantic plugins"),
    pytest.param("", 1, id="a user who sets PYDANTIC_DISABLE_PLUGINS keeps their value"),
])
def test_validate_skips_the_pydantic_plugin_scan_unless_asked(
    tmp_path: Path, setting: str | None, scans: int
) -> None:
    import os

    manifest = tmp_path / "js.yaml"
    manifest.write_bytes(_yaml(_valid()))
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if setting is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = setting
    result = subprocess.run([sys.executable, "-c", _COUNT_METADATA_SCANS, str(manifest)],
                            capture_output=True, text=True, env=env, timeout=120, check=True)
    assert result.stdout.split() == [str(scans), "0"]
