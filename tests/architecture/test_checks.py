"""The checks themselves: each one finds a violation in a small synthetic module, and passes
the same module written the allowed way. This is what keeps the guard tests able to fail."""

from __future__ import annotations

import pytest

from tests.architecture import checks
from tests.architecture.scan import Module, imports_of, module_from_source

KNOWN = frozenset(
    {
        "jobset_infra",
        "jobset_infra.api",
        "jobset_infra.api.constants",
        "jobset_infra.api.models",
        "jobset_infra.tpu",
        "jobset_infra.tpu.catalog",
        "jobset_infra.manifests",
        "jobset_infra.manifests.meta",
        "jobset_infra.controller",
        "jobset_infra.controller.core",
        "jobset_infra.controller.core.types",
        "jobset_infra.placement",
        "jobset_infra.controller.runtime",
        "jobset_infra.controller.runtime.manager",
        "jobset_infra.sim",
        "jobset_infra.sim.apiserver",
        "jobset_infra.sim.apiserver.server",
        "jobset_infra.sim.apiserver.store",
        "jobset_infra.sim.cluster",
        "jobset_infra.sim.cluster.scheduler",
        "jobset_infra.sim.command",
        "jobset_infra.sim.demo",
        "jobset_infra.testing",
        "jobset_infra.testing.jobs",
        "jobset_infra.testing.jobsets",
    }
)


def _mod(name: str, source: str) -> Module:
    return module_from_source(name, source)


@pytest.mark.parametrize(
    "name, source, want_violations",
    [
        pytest.param("jobset_infra.sim.command",
                     "from jobset_infra.controller.runtime import manager\n", 1,
                     id="sim/command.py importing the runtime at module level"),
        pytest.param("jobset_infra.sim.command",
                     "def f():\n    from jobset_infra.controller.runtime import manager\n", 0,
                     id="sim/command.py importing the runtime inside a function"),
        pytest.param("jobset_infra.sim.command",
                     "import importlib\n"
                     "importlib.import_module('jobset_infra.controller.runtime.manager')\n", 1,
                     id="an import_module call at module level is an eager import"),
        pytest.param("jobset_infra.sim.command",
                     "import importlib\n"
                     "def f():\n    importlib.import_module('jobset_infra.controller.runtime')\n",
                     0, id="import_module inside a function is lazy"),
        pytest.param("jobset_infra.sim.command", "from jobset_infra.sim.apiserver import x\n", 0,
                     id="what is not listed may be imported at module level"),
        pytest.param("jobset_infra.sim.other",
                     "from jobset_infra.controller.runtime import manager\n", 0,
                     id="modules not listed are the import contract's business"),
    ],
)
def test_eager_import_check(name: str, source: str, want_violations: int) -> None:
    found = checks.eager_import_violations(
        [_mod(name, source)], {"jobset_infra.sim.command": ("jobset_infra.controller",)}, KNOWN
    )
    assert len(found) == want_violations, [v.text for v in found]


@pytest.mark.parametrize(
    "source, want_violations",
    [
        pytest.param("from datetime import datetime\nx = datetime.now()\n", 1,
                     id="datetime.now is a clock read"),
        pytest.param("import datetime as dt\nx = dt.datetime.now(dt.UTC)\n", 1,
                     id="a qualified datetime.now is a clock read"),
        pytest.param("import time\nx = time.monotonic()\n", 1, id="time.monotonic"),
        pytest.param("from time import time\n", 1, id="importing time.time"),
        pytest.param("from dataclasses import field\nfrom datetime import datetime\n"
                     "f = field(default_factory=datetime.now)\n", 1,
                     id="a clock passed as a default factory"),
        pytest.param("from datetime import datetime, timedelta\n"
                     "def later(now: datetime) -> datetime:\n    return now + timedelta(1)\n", 0,
                     id="an injected now is pure"),
    ],
)
def test_clock_check(source: str, want_violations: int) -> None:
    found = checks.clock_violations([_mod("jobset_infra.controller.core.x", source)])
    assert len(found) == want_violations, [v.text for v in found]


@pytest.mark.parametrize(
    "name, source, want_violations",
    [
        pytest.param("jobset_infra.controller.core.x",
                     "KEY = 'jobset.sigs.k8s.io/jobset-name'\n", 1,
                     id="an upstream label key outside constants"),
        pytest.param("jobset_infra.sim.x",
                     "def f(n):\n    return f'alpha.jobset.sigs.k8s.io/{n}'\n", 1,
                     id="an upstream annotation prefix in an f-string"),
        pytest.param("jobset_infra.api.constants",
                     "KEY = 'jobset.sigs.k8s.io/jobset-name'\n", 0,
                     id="the constants module is where they live"),
        pytest.param("jobset_infra.tpu.x",
                     "'''Mirrors `jobset.sigs.k8s.io/jobset-name`.'''\n", 0,
                     id="a docstring may quote a key"),
    ],
)
def test_upstream_string_check(name: str, source: str, want_violations: int) -> None:
    assert len(checks.upstream_string_violations([_mod(name, source)])) == want_violations


def test_size_checks() -> None:
    long_body = "".join(f"    x{i} = {i}\n" for i in range(61))
    module = _mod("jobset_infra.tpu.x", f"def f():\n{long_body}")
    assert len(checks.function_size_violations([module], 60)) == 1
    assert checks.function_size_violations([module], 62) == []
    assert len(checks.module_size_violations([module], 61)) == 1
    assert checks.module_size_violations([module], 62) == []


@pytest.mark.parametrize(
    "source, want_missing, want_unbound",
    [
        pytest.param("__all__ = ['f']\ndef f(): ...\ndef g(): ...\n", {"g"}, set(),
                     id="a public function missing from __all__"),
        pytest.param("__all__ = ['f', 'h']\ndef f(): ...\n", set(), {"h"},
                     id="__all__ naming an undefined name"),
        pytest.param("from typing import TypeVar\n__all__ = ['f']\n_T = TypeVar('_T')\n"
                     "def f(): ...\n", set(), set(), id="private names and imports are exempt"),
        pytest.param("X = 1\n", set(), set(), id="a module without __all__ is not checked"),
    ],
)
def test_export_check(source: str, want_missing: set[str], want_unbound: set[str]) -> None:
    missing, unbound = checks.export_violations(_mod("jobset_infra.api.x", source))
    assert (missing, unbound) == (want_missing, want_unbound)


def test_allow_list_reports_stale_entries() -> None:
    found = checks.declared_once_violations(
        [_mod("jobset_infra.api.x", "SUFFIX = 'Ki'\n")], "jobset_infra.owner", frozenset({"Ki"})
    )
    remaining, stale = checks.split_allow_listed(
        found, {("jobset_infra.api.x", "Ki"), ("jobset_infra.api.y", "Ki")}
    )
    assert remaining == []
    assert stale == {("jobset_infra.api.y", "Ki")}


def test_relative_imports_resolve_against_the_package() -> None:
    init = module_from_source("jobset_infra.controller.core", "from . import types\n",
                              package=True)
    leaf = _mod("jobset_infra.controller.core.x", "from ...placement import y\n")
    assert [i.target for i in imports_of(init, KNOWN)] == ["jobset_infra.controller.core.types"]
    assert [i.target for i in imports_of(leaf, KNOWN)] == ["jobset_infra.placement"]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("import time as t\nx = t.monotonic()\n", id="an aliased time module"),
        pytest.param("from datetime import datetime as D\nx = D.now()\n",
                     id="an aliased datetime class"),
        pytest.param("def f():\n    import uuid\n    return uuid.uuid4()\n",
                     id="a lazily imported uuid4"),
    ],
)
def test_clock_check_sees_through_aliases(source: str) -> None:
    assert len(checks.clock_violations([_mod("jobset_infra.tpu.x", source)])) == 1


@pytest.mark.parametrize(
    "source, want_violations",
    [
        pytest.param("async def f():\n    return 1\n", 1, id="an async function"),
        pytest.param("def f(x):\n    return x\n", 0, id="a plain function"),
    ],
)
def test_async_check(source: str, want_violations: int) -> None:
    assert len(checks.async_violations([_mod("jobset_infra.tpu.x", source)])) == want_violations


@pytest.mark.parametrize(
    "name, want_violations",
    [
        pytest.param("jobset_infra.sim.utils", 1, id="utils.py is a grab bag"),
        pytest.param("jobset_infra.controller.core.helpers", 1, id="helpers.py is a grab bag"),
        pytest.param(
            "jobset_infra.sim.apiserver.selectors", 0, id="a module named for what it does"
        ),
    ],
)
def test_grab_bag_check(name: str, want_violations: int) -> None:
    assert len(checks.grab_bag_violations([_mod(name, "X = 1\n")])) == want_violations


@pytest.mark.parametrize(
    "source, want_violations",
    [
        pytest.param("@pytest.mark.parametrize('x', [1, 2])\ndef test_a(x): ...\n", 1,
                     id="bare values have no ids"),
        pytest.param("@pytest.mark.parametrize('x', [pytest.param(1, id='one'), 2])\n"
                     "def test_a(x): ...\n", 1, id="one case without an id"),
        pytest.param("@pytest.mark.parametrize('x', [1, 2], ids=['one', 'two'])\n"
                     "def test_a(x): ...\n", 0, id="ids on the decorator"),
        pytest.param("@pytest.mark.parametrize('x', [pytest.param(1, id='one')])\n"
                     "def test_a(x): ...\n", 0, id="every case a pytest.param with an id"),
        pytest.param("@pytest.mark.parametrize('x', list(range(3)))\ndef test_a(x): ...\n", 0,
                     id="a computed list is left to review"),
    ],
)
def test_parametrize_id_check(source: str, want_violations: int) -> None:
    found = checks.parametrize_id_violations([_mod("tests.x.test_y", source)])
    assert len(found) == want_violations


@pytest.mark.parametrize(
    "source, want_violations",
    [
        pytest.param("from prometheus_client import Counter\nX = Counter('jobs_total', 'h')\n", 1,
                     id="a metric named by a literal"),
        pytest.param("import prometheus_client as p\nX = p.Gauge('depth', 'h')\n", 1,
                     id="a qualified metric class"),
        pytest.param("from prometheus_client import Counter\nfrom jobset_infra.api import "
                     "constants as c\nX = Counter(c.METRIC_RECONCILE_TOTAL, 'h')\n", 0,
                     id="a metric named by a constant"),
        pytest.param("from collections import Counter\nX = Counter(['a', 'b'])\n", 0,
                     id="collections.Counter of a list is not a metric"),
    ],
)
def test_metric_name_check(source: str, want_violations: int) -> None:
    found = checks.metric_name_violations([_mod("jobset_infra.controller.runtime.x", source)])
    assert len(found) == want_violations


def test_metric_name_check_ignores_collections_counter() -> None:
    source = "from collections import Counter\nX = Counter('aab')\n"
    assert checks.metric_name_violations([_mod("jobset_infra.sim.x", source)]) == []


@pytest.mark.parametrize(
    "name, source, want_violations",
    [
        pytest.param("jobset_infra.sim.cluster.x", "SUFFIX = {'Ki': 1024}\n", 1,
                     id="a second quantity table elsewhere"),
        pytest.param("jobset_infra.owner", "SUFFIX = {'Ki': 1024}\n", 0,
                     id="the owner spells its own markers"),
        pytest.param("jobset_infra.sim.cluster.x", "def f():\n    'Ki and Gt in a docstring'\n",
                     0, id="a docstring may name them"),
    ],
)
def test_declared_once_check(name: str, source: str, want_violations: int) -> None:
    found = checks.declared_once_violations(
        [_mod(name, source)], "jobset_infra.owner", frozenset({"Ki"})
    )
    assert len(found) == want_violations


@pytest.mark.parametrize(
    "source, want_violations",
    [
        pytest.param("class C:\n    restart_job_enabled: bool = False\n", 1,
                     id="a bool field for one gate is a second declaration"),
        pytest.param("class C:\n    elastic_job_set: bool = False\n", 1,
                     id="a field named exactly for the gate is one too"),
        pytest.param("class C:\n    gates: FeatureGates\n", 0,
                     id="holding the registry's FeatureGates is the allowed spelling"),
    ],
)
def test_gate_field_check(source: str, want_violations: int) -> None:
    found = checks.gate_field_violations([_mod("jobset_infra.x", source)],
                                         ["RestartJob", "ElasticJobSet"])
    assert len(found) == want_violations


@pytest.mark.parametrize(
    "source, want_violations",
    [
        pytest.param('n = f"{js}-{rjob}-{i}"\n', 1, id="the child Job name formula restated"),
        pytest.param('n = f"{js}-{rjob}"\n', 0, id="a two-part name is another formula"),
        pytest.param('n = f"{a}-{b}-4{c}"\n', 0, id="other separators are other formulas"),
    ],
)
def test_dash_formula_check(source: str, want_violations: int) -> None:
    found = checks.dash_formula_violations([_mod("jobset_infra.x", source)], "jobset_infra.own")
    assert len(found) == want_violations


@pytest.mark.parametrize(
    "name, source, want_violations",
    [
        pytest.param("jobset_infra.x", "ok = c.EXCLUSIVE_KEY in annotations\n", 1,
                     id="reading the exclusive annotation outside its owner"),
        pytest.param("jobset_infra.own", "ok = c.EXCLUSIVE_KEY in annotations\n", 0,
                     id="its owner reads it"),
        pytest.param("jobset_infra.x", "ok = exclusive_topology(annotations)\n", 0,
                     id="asking the owner is the allowed spelling"),
        pytest.param("jobset_infra.x", 'm = f"set {c.EXCLUSIVE_KEY} on it"\n', 0,
                     id="naming it in a message is not deciding"),
    ],
)
def test_name_use_check(name: str, source: str, want_violations: int) -> None:
    found = checks.name_use_violations([_mod(name, source)], frozenset({"EXCLUSIVE_KEY"}),
                                       frozenset({"jobset_infra.own"}), "jobset_infra.own")
    assert len(found) == want_violations


@pytest.mark.parametrize(
    "source, want_violations",
    [
        pytest.param("s = replace(spec, cluster_location=x)\n", 1,
                     id="filling the pools' location again"),
        pytest.param("s = pools_in_cluster(spec, cluster)\n", 0, id="calling the owner"),
    ],
)
def test_keyword_check(source: str, want_violations: int) -> None:
    found = checks.keyword_violations([_mod("jobset_infra.x", source)], "cluster_location",
                                      frozenset(), "owner")
    assert len(found) == want_violations


@pytest.mark.parametrize(
    "source, want_violations",
    [
        pytest.param("SIZES = {4: (112, 192)}\n", 1, id="a VM size table declared again"),
        pytest.param("size = VmSize(112, 192)\n", 1, id="a VM size built by hand"),
        pytest.param("pair = (192, 112)\n", 0, id="the same numbers in another order"),
    ],
)
def test_number_pair_check(source: str, want_violations: int) -> None:
    found = checks.number_pair_violations([_mod("jobset_infra.x", source)],
                                          frozenset({(112, 192)}), "owner")
    assert len(found) == want_violations


@pytest.mark.parametrize(
    "name, source, want_violations",
    [
        pytest.param("jobset_infra.x", "p = spec_problems(js, config)\n", 1,
                     id="a second cache calls the check itself"),
        pytest.param("jobset_infra.x", "p = admission.spec_problems(js, config)\n", 1,
                     id="through the module too"),
        pytest.param("jobset_infra.own", "p = spec_problems(js, config)\n", 0,
                     id="the one cache calls it"),
    ],
)
def test_call_check(name: str, source: str, want_violations: int) -> None:
    found = checks.call_violations([_mod(name, source)], "spec_problems",
                                   frozenset({"jobset_infra.own"}), "jobset_infra.own")
    assert len(found) == want_violations


@pytest.mark.parametrize(
    "path, want",
    [
        pytest.param("tests/test_readme.py", "unit", id="a module directly in tests is unit"),
        pytest.param("tests/controller/core/test_x.py", "unit", id="a nested folder is found"),
        pytest.param("tests/integration/test_x.py", "sim", id="the controller on the sim"),
        pytest.param("tests/e2e/test_x.py", "e2e", id="end to end"),
        pytest.param("tests/chaos/test_x.py", "chaos", id="faults on the real control plane"),
        pytest.param("tests/newthing/test_x.py", None, id="a new folder has no tier until listed"),
    ],
)
def test_tier_of(path: str, want: str | None) -> None:
    from tests.conftest import tier_of

    assert tier_of(path) == want


@pytest.mark.parametrize(
    "name, source, want_violations",
    [
        pytest.param("jobset_infra.controller.runtime.x", "P = {('batch', 'jobs', 'list')}\n", 1,
                     id="a permission tuple outside api/rbac.py"),
        pytest.param("tests.manifests.test_x",
                     "WANT = [{'apiGroups': [''], 'resources': ['x'], 'verbs': ['get']}]\n", 1,
                     id="a hand copy of a rule in a test"),
        pytest.param("jobset_infra.manifests.x", "R = PolicyRule(('',), ('x',), ('get',))\n", 1,
                     id="a PolicyRule outside api/rbac.py"),
        pytest.param("jobset_infra.api.rbac", "R = PolicyRule(('',), ('x',), ('get',))\n", 0,
                     id="the declaration itself"),
        pytest.param("jobset_infra.sim.x", "T = ('a', 'b', 'c')\n", 0,
                     id="a triple that ends in no verb"),
        pytest.param("tests.chaos.test_x", "R = {'verbs': ['*'], 'apiGroups': ['*'], "
                     "'resources': ['*'], 'namespaces': ['*'], 'clusterScope': True}\n", 0,
                     id="a FlowSchema's resource rule selects requests, it grants nothing"),
    ],
)
def test_permission_declaration_check(name: str, source: str, want_violations: int) -> None:
    found = checks.permission_declaration_violations([_mod(name, source)])
    assert len(found) == want_violations, [v.text for v in found]


@pytest.mark.parametrize(
    "name, source, want_violations",
    [
        pytest.param("jobset_infra.controller.runtime.x",
                     "class Snapshot:\n    jobs: int\n    service_exists: bool\n", 1,
                     id="a second class with the observed fields"),
        pytest.param("jobset_infra.owner",
                     "class Observed:\n    jobs: int\n    service_exists: bool\n", 0,
                     id="the one declaration"),
        pytest.param("jobset_infra.controller.runtime.x", "class Other:\n    jobs: int\n", 0,
                     id="sharing one field name is not a copy"),
    ],
)
def test_repeated_shape_check(name: str, source: str, want_violations: int) -> None:
    fields = frozenset({"jobs", "service_exists"})
    found = checks.repeated_shape_violations(
        [_mod(name, source)], "jobset_infra.owner", "Observed", fields
    )
    assert len(found) == want_violations


@pytest.mark.parametrize(
    "source, want_violations",
    [
        pytest.param("class Args:\n    namespace: str = 'ns'\n    replicas: int = 2\n", 1,
                     id="two fields restated with the model's defaults"),
        pytest.param("class Args:\n    replicas: int = Field(default=2, ge=1)\n"
                     "    namespace: str = 'ns'\n", 1, id="a Field default counts too"),
        pytest.param("class Args:\n    replicas: int = 2\n    name: str = 'other'\n", 0,
                     id="one shared default is a coincidence"),
        pytest.param("class Args(Options):\n    image: str | None = None\n", 0,
                     id="a subclass adds fields without restating"),
    ],
)
def test_restated_default_check(source: str, want_violations: int) -> None:
    defaults: dict[str, object] = {"namespace": "ns", "replicas": 2, "name": "n"}
    found = checks.restated_default_violations(
        [_mod("jobset_infra.components.x", source)], "jobset_infra.owner", "Options", defaults
    )
    assert len(found) == want_violations


@pytest.mark.parametrize(
    "source, want_violations",
    [
        pytest.param("from jobset_infra.api import constants as c\nM = c.FIRST\n", 1,
                     id="a check naming the constant of a CEL rule's message"),
        pytest.param("M = 'DependsOn cannot be set first'\n", 1,
                     id="a check spelling a CEL rule's message"),
        pytest.param("from jobset_infra.api import constants as c\nM = c.OTHER\n", 0,
                     id="a message only the check has"),
    ],
)
def test_restated_rule_check(source: str, want_violations: int) -> None:
    found = checks.restated_rule_violations(
        [_mod("jobset_infra.api.validation", source)],
        frozenset({"DependsOn cannot be set first"}),
        {"FIRST": "DependsOn cannot be set first", "OTHER": "something else"},
    )
    assert len(found) == want_violations
