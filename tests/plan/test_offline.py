"""The offline runner records what a program registers; the preview draws it as pulumi does."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
import pytest

from jobset_infra.plan.offline import ProgramError, run_offline
from jobset_infra.plan.preview import (
    SECRET_PLACEHOLDER,
    kubernetes_objects,
    redact_secrets,
    render_tree,
)


class _Demo(pulumi.ComponentResource):
    def __init__(self, name: str) -> None:
        super().__init__("jobset-infra:index:Demo", name, None, None)
        child = pulumi.ResourceOptions(parent=self)
        ns = k8s.core.v1.Namespace(f"{name}-ns", metadata={"name": "demo"}, opts=child)
        k8s.core.v1.ConfigMap(
            f"{name}-cm",
            metadata={"namespace": ns.metadata.name},
            data={"key": pulumi.Output.secret("hunter2")},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[ns]),
        )
        pulumi.log.warn("demo warning")
        self.register_outputs({})


def _program() -> None:
    _Demo("sys")
    pulumi.export("greeting", pulumi.Config().require("greeting"))


def test_records_types_names_parents_and_dependencies() -> None:
    run = run_offline(_program, stack="t1", config={"jobset-infra:greeting": "hi"})

    want = [
        ("jobset-infra:index:Demo", "sys", None),
        ("kubernetes:core/v1:Namespace", "sys-ns", "jobset-infra:index:Demo"),
        ("kubernetes:core/v1:ConfigMap", "sys-cm", "jobset-infra:index:Demo"),
    ]
    assert [(r.type, r.name, r.parent_type) for r in run.registrations] == want
    namespace = run.named("sys-ns")
    assert run.named("sys-cm").dependencies == (namespace.urn,)
    assert run.warnings() == ["demo warning"]


def test_runs_do_not_bleed_into_each_other() -> None:
    first = run_offline(_program, stack="t2", config={"jobset-infra:greeting": "a"})
    second = run_offline(_program, stack="t3", config={"jobset-infra:greeting": "b"})
    assert len(first.registrations) == len(second.registrations) == 3


def test_program_failure_is_reported_with_its_own_message() -> None:
    with pytest.raises(ProgramError, match="Missing required configuration variable"):
        run_offline(_program, stack="t4", config={})


def test_program_from_a_path(tmp_path: Path) -> None:
    main = tmp_path / "__main__.py"
    main.write_text(
        "import pulumi_kubernetes as k8s\n"
        "k8s.core.v1.Namespace('ns', metadata={'name': 'from-path'})\n"
    )
    run = run_offline(main, stack="t5")
    assert [o["metadata"]["name"] for o in kubernetes_objects(run.registrations)] == ["from-path"]


def test_tree_shows_nesting_and_key_inputs() -> None:
    run = run_offline(_program, stack="t6", config={"jobset-infra:greeting": "hi"})
    tree = render_tree(run.registrations, "jobset-infra", "t6").splitlines()
    assert tree[1].split() == ["+", "pulumi:pulumi:Stack", "jobset-infra-t6"]
    assert tree[2].split() == ["+", "└─", "jobset-infra:index:Demo", "sys"]
    assert tree[3].split() == ["+", "├─", "kubernetes:core/v1:Namespace", "sys-ns", "name=demo"]
    assert "+ 4 to create" in tree[-1]


def test_secrets_never_reach_objects_or_tree() -> None:
    run = run_offline(_program, stack="t7", config={"jobset-infra:greeting": "hi"})
    objects = kubernetes_objects(run.registrations)
    assert objects[1]["data"] == SECRET_PLACEHOLDER  # Pulumi marks the whole property secret
    assert "hunter2" not in render_tree(run.registrations, "p", "s")


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param({"a": 1}, {"a": 1}, id="plain mapping is unchanged"),
        pytest.param(
            {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": "x"},
            SECRET_PLACEHOLDER,
            id="a wire-encoded secret is replaced",
        ),
        pytest.param(
            [{"b": {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}}],
            [{"b": SECRET_PLACEHOLDER}],
            id="nested secrets in lists are replaced",
        ),
    ],
)
def test_redact_secrets(value: object, want: object) -> None:
    assert redact_secrets(value) == want
