"""Guard tests: jobset_infra's architecture as DESIGN.md and style-anchors.md section 10 state it.

Each test runs one check of checks.py over the real tree (read with `ast`, never imported) and
lists every violation with file:line and the rule. Known violations in files whose owners are
still working are allow-listed in rules.py with the reason and the fix; an entry that is no
longer needed fails too, so the list only shrinks.
"""

from __future__ import annotations

import pytest

from tests.architecture import checks, rules
from tests.architecture.scan import (
    REPO,
    Module,
    collect_test_files,
    known_module_names,
    modules_under,
    package_modules,
)


def _everything() -> list[Module]:
    return list(package_modules())


def _layers(*layers: str) -> list[Module]:
    return [m for m in package_modules() if rules.layer_of(m.name) in layers]


def test_every_module_belongs_to_a_layer() -> None:
    unknown = [m.path for m in package_modules() if rules.layer_of(m.name) is None]
    assert package_modules(), "no modules found: is the test run from the repository?"
    assert unknown == []


def test_imports_follow_the_layers() -> None:
    violations = checks.layer_violations(_everything(), known_module_names())
    remaining, stale = checks.split_allow_listed(violations, rules.LAYER_ALLOW_LIST)
    assert remaining == [], "imports against the layering (DESIGN.md, guideline 1)"
    assert stale == set(), "fixed: remove these LAYER_ALLOW_LIST entries"


def test_namespace_packages_import_nothing_of_ours() -> None:
    violations = checks.namespace_violations(_everything(), known_module_names())
    assert [v.text for v in violations] == []


def test_sim_runs_without_the_controller() -> None:
    violations = checks.closure_violations(
        "jobset_infra.sim", rules.SIM_CLOSURE, _everything(), known_module_names()
    )
    assert [v.text for v in violations] == [], "importing sim must not import the controller"


def test_sim_apiserver_runs_without_its_cluster() -> None:
    violations = checks.closure_violations(
        "jobset_infra.sim.apiserver", rules.SIM_APISERVER_CLOSURE, _everything(),
        known_module_names(),
    )
    assert [v.text for v in violations] == [], "the sim's API server stands alone"


@pytest.mark.parametrize(
    "start, layers",
    [
        pytest.param("jobset_infra.api", {"api"}, id="api imports only api"),
        pytest.param("jobset_infra.tpu", {"tpu"}, id="tpu imports only tpu"),
        pytest.param(
            "jobset_infra.placement", {"placement", "api", "tpu"},
            id="placement imports only placement, api and tpu",
        ),
        pytest.param(
            "jobset_infra.controller.core",
            {"controller.core", "placement", "api", "tpu"},
            id="the core's closure is core, placement, api",
        ),
    ],
)
def test_pure_packages_closures(start: str, layers: set[str]) -> None:
    allowed = frozenset(layers | {"namespace"})
    violations = checks.closure_violations(start, allowed, _everything(), known_module_names())
    assert [v.text for v in violations] == []


def test_pulumi_only_in_components() -> None:
    assert [v.text for v in checks.pulumi_violations(_everything())] == [], (
        "pulumi is imported only in components/ and stacks/ (plan command lazily)"
    )


def test_pure_packages_do_no_io() -> None:
    violations = checks.third_party_violations(
        _everything(), rules.IO_MODULES, rules.PURE_LAYERS
    )
    assert [v.text for v in violations] == [], "no network, clients, asyncio or processes here"


def test_pure_packages_read_no_clock_or_randomness() -> None:
    violations = checks.clock_violations(_layers(*rules.PURE_LAYERS))
    assert [v.text for v in violations] == [], "time and randomness are injected (guideline 10)"


def test_deciding_code_is_not_async() -> None:
    violations = checks.async_violations(_layers(*rules.PURE_LAYERS))
    assert [v.text for v in violations] == [], "decisions are pure; the runtime does the I/O"


def test_table_tests_have_sentence_ids() -> None:
    modules = collect_test_files(*rules.ID_TEST_FOLDERS)
    assert len(modules) > 20
    violations = checks.parametrize_id_violations(modules)
    assert [v.text for v in violations] == [], "guideline 7: pytest.param(..., id='a sentence')"


@pytest.mark.parametrize(
    "folder", [pytest.param(f, id=f) for f in rules.PROPERTY_TEST_FOLDERS]
)
def test_planners_have_property_tests(folder: str) -> None:
    given = [m.path for m in collect_test_files(folder) if "@given(" in m.source]
    assert given, f"guideline 8: {folder} has no hypothesis @given test"


def test_generated_files_say_so() -> None:
    files = sorted({p for g in rules.GENERATED_DATA_GLOBS for p in REPO.glob(g)})
    assert files, "the generated CRD is missing"
    unmarked = [
        str(p.relative_to(REPO))
        for p in files
        if rules.GENERATED_HEADER not in p.read_text(encoding="utf-8").partition("\n")[0]
    ]
    assert unmarked == [], "generated files start with a 'Generated by ... DO NOT EDIT' line"


def test_no_grab_bag_modules() -> None:
    assert [v.text for v in checks.grab_bag_violations(_everything())] == []


def test_every_policy_module_has_its_own_tests() -> None:
    policies = [
        m.name.rpartition(".")[2]
        for m in modules_under(rules.POLICY_PACKAGE)
        if m.name.endswith("_policy")
        or m.name.rpartition(".")[2] in rules.EXTRA_POLICY_MODULES
    ]
    assert len(policies) >= len(rules.EXTRA_POLICY_MODULES) + 3, policies
    missing = [p for p in policies if not (REPO / rules.POLICY_TESTS / f"test_{p}.py").is_file()]
    assert missing == [], f"guideline 2: add {rules.POLICY_TESTS}/test_<policy>.py"


def test_upstream_strings_live_in_api_constants() -> None:
    violations = checks.upstream_string_violations(_everything())
    remaining, stale = checks.split_allow_listed(violations, rules.CONSTANTS_ALLOW_LIST)
    assert remaining == [], "guideline 4: exact upstream strings live in api/constants.py"
    assert stale == set(), "fixed: remove these CONSTANTS_ALLOW_LIST entries"


def test_metric_names_live_in_api_constants() -> None:
    violations = checks.metric_name_violations(_everything())
    remaining, stale = checks.split_allow_listed(violations, rules.METRIC_ALLOW_LIST)
    assert remaining == [], "guideline 4: metric names are constants in api/constants.py"
    assert stale == set(), "fixed: remove these METRIC_ALLOW_LIST entries"


def test_modules_stay_small() -> None:
    # generated code (verified by regeneration in CI instead) is not written by hand
    written = [m for m in _everything() if ".protobuf.generated." not in m.name]
    violations = checks.module_size_violations(written, rules.MAX_MODULE_LINES)
    remaining, stale = checks.split_allow_listed(violations, rules.MODULE_SIZE_ALLOW_LIST)
    assert remaining == [], "split modules over ~450 lines into named parts"
    assert stale == set(), "fixed: remove these MODULE_SIZE_ALLOW_LIST entries"


def test_deciding_functions_stay_short() -> None:
    modules = modules_under(*rules.SHORT_FUNCTION_LAYERS)
    assert modules
    violations = checks.function_size_violations(modules, rules.MAX_FUNCTION_LINES)
    assert [v.text for v in violations] == [], "extract named helpers (guideline 2)"


@pytest.mark.parametrize(
    "module",
    [pytest.param(m, id=m.name) for m in modules_under(*rules.EXPORT_PACKAGES)],
)
def test_all_lists_exactly_the_public_names(module: Module) -> None:
    missing, unbound = checks.export_violations(module)
    allowed = rules.EXPORT_ALLOW_LIST.get(module.name, frozenset())
    assert unbound == set(), f"{module.path}: __all__ names what the module does not define"
    assert missing - allowed == set(), f"{module.path}: public names missing from __all__"
    assert allowed <= missing, f"{module.path}: stale EXPORT_ALLOW_LIST names {allowed - missing}"


@pytest.mark.parametrize(
    "concept", [pytest.param(c, id=c) for c in rules.DECLARED_ONCE_LITERALS]
)
def test_concepts_are_declared_once(concept: str) -> None:
    owner, markers = rules.DECLARED_ONCE_LITERALS[concept]
    assert owner in known_module_names(), f"{owner} is gone: update DECLARED_ONCE_LITERALS"
    violations = checks.declared_once_violations(_everything(), owner, markers)
    assert [v.text for v in violations] == [], f"{concept} are declared in {owner} only"


def test_feature_gates_are_declared_once() -> None:
    from enum import Enum

    from jobset_infra.api import model_base
    from jobset_infra.api.features import Feature

    api_enum_values = {
        member.value
        for enum in vars(model_base).values()
        if isinstance(enum, type) and issubclass(enum, Enum)
        and enum.__module__ == model_base.__name__
        for member in enum
    }
    spelled = [
        v for v in checks.declared_once_violations(
            _everything(), rules.FEATURES_OWNER, frozenset(f.value for f in Feature))
        if not (v.module == rules.API_ENUMS_MODULE and v.subject in api_enum_values)
    ]
    assert [v.text for v in spelled] == [], "name a gate as Feature.X (api/features.py)"
    fields = checks.gate_field_violations(_everything(), [f.value for f in Feature])
    assert [v.text for v in fields] == [], "hold a FeatureGates, not a field per gate"


def test_child_job_names_are_declared_once() -> None:
    violations = checks.dash_formula_violations(_everything(), rules.CHILD_JOB_NAMES_OWNER)
    assert [v.text for v in violations] == [], "use api.job_names.child_job_name"


def test_exclusive_placement_is_decided_once() -> None:
    violations = checks.name_use_violations(
        _everything(), rules.PLACEMENT_ANNOTATIONS, rules.PLACEMENT_ANNOTATION_WRITERS,
        rules.PLACEMENT_OWNER,
    )
    assert [v.text for v in violations] == [], "ask placement.strategy which Jobs are exclusive"


def test_a_stacks_pools_meet_their_cluster_in_one_place() -> None:
    violations = checks.keyword_violations(
        _everything(), "cluster_location", rules.POOLS_LOCATION_SETTERS,
        f"{rules.POOLS_IN_CLUSTER_OWNER}.pools_in_cluster",
    )
    assert [v.text for v in violations] == [], "plan pools with tpu.cluster.pools_in_cluster"


def test_tpu_vm_sizes_are_declared_once() -> None:
    from jobset_infra.tpu.node_pools import VM_SIZES

    pairs = frozenset((size.vcpus, size.memory_gb) for size in VM_SIZES.values())
    violations = checks.number_pair_violations(_everything(), pairs, rules.VM_SIZES_OWNER)
    assert [v.text for v in violations] == [], "use tpu.node_pools.vm_size"


def test_the_spec_check_has_one_cache() -> None:
    violations = checks.call_violations(
        _everything(), "spec_problems", rules.SPEC_CHECK_CALLERS, rules.SPEC_CACHE_OWNER
    )
    assert [v.text for v in violations] == [], "check specs through runtime.spec_cache"


def test_every_test_module_has_a_tier() -> None:
    from tests.conftest import tier_of

    files = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("test_*.py"))
    assert len(files) > 100
    assert [f for f in files if tier_of(f) is None] == [], "add the folder to tests/conftest.TIERS"


def test_permissions_are_declared_once() -> None:
    modules = [*_everything(), *collect_test_files("tests")]
    violations = checks.permission_declaration_violations(modules)
    assert [v.text for v in violations] == [], "RBAC rules live in jobset_infra/api/rbac.py"


def test_the_controller_keeps_the_jobset_status_as_its_model() -> None:
    # Derived from the model, so a new status field is covered without editing this test.
    from jobset_infra.api.status import JobSetStatus, ReplicatedJobStatus

    wire_names = {
        field.alias or name
        for model in (JobSetStatus, ReplicatedJobStatus)
        for name, field in model.model_fields.items()
    }
    markers = frozenset(wire_names - rules.STATUS_GENERIC_KEYS)
    assert "replicatedJobsStatus" in markers
    violations = checks.declared_once_violations(
        modules_under(rules.STATUS_SCOPE), rules.STATUS_OWNER, markers
    )
    assert [v.text for v in violations] == [], "use the api/status.py model, not its wire keys"


def test_one_type_holds_what_a_reconcile_observes() -> None:
    owner, name = rules.OBSERVED_OWNER
    violations = checks.repeated_shape_violations(
        _everything(), owner, name, rules.OBSERVED_FIELDS
    )
    assert [v.text for v in violations] == [], "use controller.core.types.Observed"


@pytest.mark.parametrize(
    "owner, model", [pytest.param(o, m, id=m) for o, m in rules.CONFIG_MODELS]
)
def test_each_install_concept_has_one_model(owner: str, model: str) -> None:
    import importlib

    from pydantic import BaseModel

    cls = getattr(importlib.import_module(owner), model)
    assert issubclass(cls, BaseModel)
    defaults = {
        name: field.default
        for name, field in cls.model_fields.items()
        if isinstance(field.default, str | int | float | bool | tuple)
    }
    violations = checks.restated_default_violations(_everything(), owner, model, defaults)
    assert [v.text for v in violations] == [], f"embed or subclass {model} instead"


@pytest.mark.parametrize("concept", [pytest.param(c, id=c) for c in rules.CONFIG_MARKERS])
def test_install_defaults_are_spelled_once(concept: str) -> None:
    owner, markers = rules.CONFIG_MARKERS[concept]
    violations = checks.declared_once_violations(_everything(), owner, markers)
    assert [v.text for v in violations] == [], f"{concept} come from {owner}"


def _cel_messages() -> frozenset[str]:
    from jobset_infra.api.crd.generate import generate_crd

    def walk(schema: object) -> list[str]:
        if not isinstance(schema, dict):
            return []
        found = [str(r["message"]) for r in schema.get("x-kubernetes-validations", [])]
        for sub in [*schema.get("properties", {}).values(), schema.get("items")]:
            found += walk(sub)
        return found

    [version] = generate_crd()["spec"]["versions"]
    return frozenset(walk(version["schema"]["openAPIV3Schema"]))


def test_webhook_rules_are_declared_once() -> None:
    from jobset_infra.api import constants
    from jobset_infra.api.rules import RULES

    messages = [rule.message for rule in RULES]
    assert len(messages) == len(set(messages)), "two rules of api/rules.py share a message"
    cel = _cel_messages()
    assert {r.message for r in RULES if r.cel} <= cel, "the CRD carries every CEL rule"
    values = {k: v for k, v in vars(constants).items() if k.isupper() and isinstance(v, str)}
    modules = [m for m in _everything() if m.name in rules.PYTHON_CHECK_MODULES]
    assert len(modules) == len(rules.PYTHON_CHECK_MODULES)
    violations = checks.restated_rule_violations(modules, cel, values)
    assert [v.text for v in violations] == [], "a Python check restates a CEL rule"
