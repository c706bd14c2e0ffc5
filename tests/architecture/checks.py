"""The architecture checks: each takes modules and returns its violations as sentences.

Pure over `scan.Module`, so test_checks.py proves each check fails on a small synthetic module
that breaks its rule, and the guard tests run the same checks over the real tree.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tests.architecture import rules
from tests.architecture.scan import (
    PACKAGE,
    Module,
    bound_names,
    declared_all,
    dotted,
    function_length,
    functions,
    import_aliases,
    imports_of,
    public_definitions,
    string_literals,
    within,
)


@dataclass(frozen=True)
class Violation:
    """One broken rule: the module, what it reached for (a layer, a name), and a sentence."""

    module: str
    subject: str
    text: str

    def __str__(self) -> str:
        return self.text


def eager_import_violations(
    modules: Iterable[Module], lazy_only: dict[str, tuple[str, ...]], known: frozenset[str]
) -> list[Violation]:
    """Module-level imports of what a composition root may load only lazily (inside a function,
    or by importlib), so it starts light: import-linter sees an import inside a function as any
    other, and does not see `importlib.import_module("...")` at all. The root package, which
    holds only the version, is no import of note."""
    return [
        Violation(m.name, imp.target, f"{m.path}:{imp.line}: imports {imp.target} at module "
                  "level; load it where it is used")
        for m in modules
        if m.name in lazy_only
        for imp in imports_of(m, known)
        if not imp.lazy and imp.target != PACKAGE
        and any(within(imp.target, p) for p in lazy_only[m.name])
    ]


def clock_violations(modules: Iterable[Module]) -> list[Violation]:
    """Reads of the clock (guideline 10: time is injected; importing `random` or `secrets` at all
    is the import contract's `pure-randomness`).

    Names are resolved through the module's imports, so `import time as t; t.monotonic()` and
    `from datetime import datetime as D; D.now()` are caught like the plain spellings.
    """
    found = []
    for m in modules:
        aliases = import_aliases(m)
        for node in ast.walk(m.tree):
            name = _qualified(node, aliases)
            if name in rules.CLOCK_AND_RANDOM_CALLS:
                text = f"{m.path}:{getattr(node, 'lineno', 0)}: reads {name}"
                found.append(Violation(m.name, name, text))
    return found


def _qualified(node: ast.AST, aliases: dict[str, str]) -> str:
    """The fully qualified name an attribute chain or an imported name refers to, or ''."""
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        names = [f"{node.module}.{a.name}" for a in node.names]
        return next((n for n in names if n in rules.CLOCK_AND_RANDOM_CALLS), "")
    if not isinstance(node, ast.Attribute):
        return ""
    head, _, rest = dotted(node).partition(".")
    return f"{aliases[head]}.{rest}" if head in aliases and rest else ""


def upstream_string_violations(modules: Iterable[Module]) -> list[Violation]:
    """Exact upstream label/annotation keys spelled outside api/constants.py (guideline 4)."""
    return [
        Violation(m.name, text, f"{m.path}:{line}: {text!r}: use jobset_infra/api/constants.py")
        for m in modules
        if m.name != rules.CONSTANTS_MODULE
        for line, text in string_literals(m)
        if any(fragment in text for fragment in rules.UPSTREAM_KEY_FRAGMENTS)
    ]


def module_size_violations(modules: Iterable[Module], limit: int) -> list[Violation]:
    return [Violation(m.name, str(m.line_count), f"{m.path}: {m.line_count} lines (limit {limit})")
            for m in modules if m.line_count > limit]


def function_size_violations(modules: Iterable[Module], limit: int) -> list[Violation]:
    return [
        Violation(m.name, f.name,
                  f"{m.path}:{f.lineno}: {f.name} is {function_length(f)} lines (limit {limit})")
        for m in modules
        for f in functions(m)
        if function_length(f) > limit
    ]


def export_violations(module: Module) -> tuple[set[str], set[str]]:
    """(public names missing from __all__, names in __all__ the module does not bind)."""
    exported = declared_all(module)
    if exported is None:
        return set(), set()
    return public_definitions(module) - set(exported), set(exported) - bound_names(module)


def split_allow_listed(
    violations: list[Violation], allow_list: Iterable[tuple[str, str] | str]
) -> tuple[list[str], set[tuple[str, str] | str]]:
    """(violations no entry covers, entries that covered none: stale).

    An entry is a module name (any violation in it) or (module, subject) for exactly one kind.
    """
    entries = set(allow_list)

    def covered_by(v: Violation) -> tuple[str, str] | str | None:
        for key in (v.module, (v.module, v.subject)):
            if key in entries:
                return key
        return None

    used = {covered_by(v) for v in violations} - {None}
    remaining = [v.text for v in violations if covered_by(v) is None]
    return remaining, {e for e in entries if e not in used}


def async_violations(modules: Iterable[Module]) -> list[Violation]:
    """`async def` or `await` in deciding code (guideline 3: decisions never call a client)."""
    found = []
    for m in modules:
        for node in ast.walk(m.tree):
            if isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.AsyncFor | ast.AsyncWith):
                text = f"{m.path}:{node.lineno}: {type(node).__name__} in pure code"
                found.append(Violation(m.name, type(node).__name__, text))
    return found


def grab_bag_violations(modules: Iterable[Module]) -> list[Violation]:
    """Modules named for no decision (utils, helpers, misc, common): name them for what they do."""
    return [
        Violation(m.name, m.name, f"{m.path}: a grab-bag module; name it for what it decides")
        for m in modules
        if m.name.rpartition(".")[2] in rules.GRAB_BAG_NAMES
    ]


def parametrize_id_violations(modules: Iterable[Module]) -> list[Violation]:
    """Literal parametrize tables whose cases lack a sentence id (guideline 7).

    A case passes with `ids=` on the decorator or `pytest.param(..., id="...")`; a computed
    argument list (a comprehension, `list(SomeEnum)`) is left to review, since its ids come from
    values we cannot see statically.
    """
    found = []
    for m in modules:
        for node in ast.walk(m.tree):
            if not _is_parametrize(node):
                continue
            assert isinstance(node, ast.Call)
            cases = node.args[1] if len(node.args) > 1 else None
            if any(k.arg == "ids" for k in node.keywords) or not isinstance(
                cases, ast.List | ast.Tuple
            ):
                continue
            bare = sum(not _has_id(case) for case in cases.elts)
            if bare:
                text = f"{m.path}:{node.lineno}: {bare} of {len(cases.elts)} cases have no id"
                found.append(Violation(m.name, str(node.lineno), text))
    return found


def _is_parametrize(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and dotted(node.func).endswith("mark.parametrize")


def _has_id(case: ast.expr) -> bool:
    return (
        isinstance(case, ast.Call)
        and dotted(case.func).endswith("param")
        and any(k.arg == "id" for k in case.keywords)
    )


def metric_name_violations(modules: Iterable[Module]) -> list[Violation]:
    """Metrics defined with a literal name instead of an api/constants.py constant."""
    found = []
    for m in modules:
        aliases = import_aliases(m)
        for node in ast.walk(m.tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            head, _, rest = dotted(node.func).partition(".")
            qualified = ".".join(filter(None, (aliases.get(head, head), rest)))
            package, _, cls = qualified.rpartition(".")
            first = node.args[0]
            if (
                package.startswith("prometheus_client")
                and cls in rules.METRIC_CLASSES
                and isinstance(first, ast.Constant)
            ):
                text = f"{m.path}:{node.lineno}: metric {first.value!r}: use a METRIC_* constant"
                found.append(Violation(m.name, str(first.value), text))
    return found


def declared_once_violations(
    modules: Iterable[Module], owner: str, markers: frozenset[str]
) -> list[Violation]:
    """String literals that only the concept's one declaration spells, found in another module.

    A marker is a literal no other code has a reason to write (a quantity suffix, an operator
    only node selectors have): seeing it elsewhere means the concept is being declared again.
    """
    return [
        Violation(m.name, text, f"{m.path}:{line}: {text!r} belongs to {owner}; import it")
        for m in modules
        if m.name != owner
        for line, text in string_literals(m)
        if text in markers
    ]


def permission_declaration_violations(modules: Iterable[Module]) -> list[Violation]:
    """RBAC permissions spelled outside their one declaration (api/rbac.py).

    A permission is declared by a `PolicyRule(...)`, a `(group, resource, verb)` tuple of string
    literals, or a PolicyRule dict literal (a `"verbs"` key); any of them elsewhere is a second
    copy that can drift from the rules the Role is rendered from.
    """
    found = []
    for m in modules:
        if m.name == rules.PERMISSIONS_OWNER:
            continue
        for node in ast.walk(m.tree):
            what = _permission_spelling(node)
            if what:
                line = getattr(node, "lineno", 0)
                text = f"{m.path}:{line}: {what}; use {rules.PERMISSIONS_OWNER}"
                found.append(Violation(m.name, what, text))
    return found


def _permission_spelling(node: ast.AST) -> str:
    if isinstance(node, ast.Call) and dotted(node.func).rpartition(".")[2] == "PolicyRule":
        return "a PolicyRule"
    if isinstance(node, ast.Tuple) and _is_permission_triple(node):
        return "a (group, resource, verb) tuple"
    if isinstance(node, ast.Dict):
        keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
        # A FlowSchema's resource rule (API Priority and Fairness) looks alike but selects
        # requests to throttle, granting nothing; it alone has `namespaces` / `clusterScope`.
        if {"apiGroups", "verbs"} <= keys and not keys & {"namespaces", "clusterScope"}:
            return "a PolicyRule dict"
    return ""


def _is_permission_triple(node: ast.Tuple) -> bool:
    """("", "jobs", "list")-shaped: an API group ("" or dotted, or a one-word group Kubernetes
    has), a lowercase resource[/subresource], a verb."""
    values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
    if len(node.elts) != 3 or len(values) != 3 or not all(isinstance(v, str) for v in values):
        return False
    group, resource, verb = values
    group_like = group == "" or "." in group or group in rules.ONE_WORD_API_GROUPS
    return group_like and resource.replace("/", "").isalpha() and verb in rules.RBAC_VERBS


def repeated_shape_violations(
    modules: Iterable[Module], owner: str, class_name: str, fields: frozenset[str]
) -> list[Violation]:
    """Classes other than `owner.class_name` that declare all of `fields`: a copy of its shape."""
    found = []
    for m in modules:
        for node in ast.walk(m.tree):
            if not isinstance(node, ast.ClassDef):
                continue
            if (m.name, node.name) == (owner, class_name):
                continue
            declared = {
                s.target.id
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
            if fields <= declared:
                text = f"{m.path}:{node.lineno}: {node.name} repeats {owner}.{class_name}"
                found.append(Violation(m.name, node.name, text))
    return found


def restated_default_violations(
    modules: Iterable[Module], owner: str, model: str, defaults: dict[str, object]
) -> list[Violation]:
    """Classes outside `owner` restating two or more of `model`'s fields with its defaults.

    One field with the same name and default can be a coincidence (`replicas: int = 1`); two
    are a copy of the model that would have to be kept in step with it by hand.
    """
    found = []
    for m in modules:
        if m.name == owner:
            continue
        for node in ast.walk(m.tree):
            if not isinstance(node, ast.ClassDef):
                continue
            restated = sorted(
                s.target.id
                for s in node.body
                if isinstance(s, ast.AnnAssign)
                and isinstance(s.target, ast.Name)
                and s.target.id in defaults
                and _default_of(s.value) == defaults[s.target.id]
            )
            if len(restated) >= 2:
                text = f"{m.path}:{node.lineno}: {node.name} restates {model} {restated}"
                found.append(Violation(m.name, node.name, text))
    return found


_NO_DEFAULT = object()


def _default_of(value: ast.expr | None) -> object:
    """The literal default of a field (`= 2` or `= Field(default=2, ...)`), else a sentinel."""
    if isinstance(value, ast.Call) and dotted(value.func).rpartition(".")[2] == "Field":
        given = [k.value for k in value.keywords if k.arg == "default"] or value.args[:1]
        value = given[0] if given else None
    if value is None:
        return _NO_DEFAULT
    try:
        return ast.literal_eval(value)
    except ValueError:
        return _NO_DEFAULT


def restated_rule_violations(
    modules: Iterable[Module], cel_messages: frozenset[str], constants: dict[str, str]
) -> list[Violation]:
    """Python checks that word a CEL rule's message: the rule would be declared twice.

    A check restates a rule when it spells the message (or a format of it) as a literal, or
    names the constant (`c.X`) whose value is that message.
    """
    restated_constants = {name for name, value in constants.items() if value in cel_messages}
    found = []
    for m in modules:
        for line, text in string_literals(m):
            if any(message and message in text for message in cel_messages):
                found.append(Violation(m.name, text, f"{m.path}:{line}: restates {text!r}"))
        for node in ast.walk(m.tree):
            if isinstance(node, ast.Attribute) and node.attr in restated_constants:
                text = f"{m.path}:{node.lineno}: restates the CEL rule worded by {node.attr}"
                found.append(Violation(m.name, node.attr, text))
    return found


def gate_field_violations(modules: Iterable[Module], gates: Iterable[str]) -> list[Violation]:
    """Class fields that hold one feature gate each (`restart_job_enabled: bool`), a second
    declaration of the gates beside the registry's `FeatureGates`."""
    snake = {re.sub(r"(?<!^)(?=[A-Z])", "_", g).lower() for g in gates}
    names = {*snake, *(f"{s}_enabled" for s in snake), *(f"enable_{s}" for s in snake)}
    return [
        Violation(m.name, node.target.id,
                  f"{m.path}:{node.lineno}: field {node.target.id!r} restates a feature gate; "
                  "hold a FeatureGates and ask enabled(Feature.X)")
        for m in modules
        for cls in ast.walk(m.tree) if isinstance(cls, ast.ClassDef)
        for node in cls.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        and node.target.id in names
    ]


def dash_formula_violations(modules: Iterable[Module], owner: str) -> list[Violation]:
    """f-strings spelling a three-part dash formula (`f"{a}-{b}-{c}"`, the child Job name)
    outside its one declaration."""
    found = []
    for m in modules:
        if m.name == owner:
            continue
        for node in ast.walk(m.tree):
            if isinstance(node, ast.JoinedStr) and _is_dash_formula(node.values):
                text = f"{m.path}:{node.lineno}: {ast.unparse(node)} restates {owner}; import it"
                found.append(Violation(m.name, ast.unparse(node), text))
    return found


def _is_dash_formula(values: list[ast.expr]) -> bool:
    kinds = [
        "{}" if isinstance(v, ast.FormattedValue)
        else (v.value if isinstance(v, ast.Constant) else "?")
        for v in values
    ]
    return kinds == ["{}", "-", "{}", "-", "{}"]


def name_use_violations(
    modules: Iterable[Module], names: frozenset[str], allowed: frozenset[str], owner: str
) -> list[Violation]:
    """Uses of these names (`c.EXCLUSIVE_KEY`, or the bare name) outside the allowed modules:
    a module deciding again what their owner decides. Naming one in an f-string's text (a
    message) is not a use."""
    found = []
    for m in modules:
        if m.name in allowed:
            continue
        in_text = {id(n) for f in ast.walk(m.tree) if isinstance(f, ast.JoinedStr)
                   for n in ast.walk(f)}
        for node in ast.walk(m.tree):
            if id(node) in in_text:
                continue
            name = node.attr if isinstance(node, ast.Attribute) else (
                node.id if isinstance(node, ast.Name) else None)
            if name in names:
                text = f"{m.path}:{node.lineno}: {name} read here; ask {owner}"
                found.append(Violation(m.name, str(name), text))
    return found


def keyword_violations(
    modules: Iterable[Module], keyword: str, allowed: frozenset[str], owner: str
) -> list[Violation]:
    """Calls passing `keyword=` outside the allowed modules."""
    return [
        Violation(m.name, keyword,
                  f"{m.path}:{node.lineno}: {keyword}= set here; use {owner}")
        for m in modules
        if m.name not in allowed
        for node in ast.walk(m.tree)
        if isinstance(node, ast.Call) and any(k.arg == keyword for k in node.keywords)
    ]


def number_pair_violations(
    modules: Iterable[Module], pairs: frozenset[tuple[int, int]], owner: str
) -> list[Violation]:
    """Two integer literals side by side (in a tuple or a call) equal to one of `pairs`, outside
    the owner: a table of the same facts (VM vCPUs and memory) declared again."""
    found = []
    for m in modules:
        if m.name == owner:
            continue
        for node in ast.walk(m.tree):
            items = node.elts if isinstance(node, ast.Tuple | ast.List) else (
                node.args if isinstance(node, ast.Call) else [])
            ints = [v.value if isinstance(v, ast.Constant) and type(v.value) is int else None
                    for v in items]
            for first, second in itertools.pairwise(ints):
                if (first, second) in pairs:
                    text = f"{m.path}:{node.lineno}: ({first}, {second}) belongs to {owner}"
                    found.append(Violation(m.name, f"{first},{second}", text))
    return found


def call_violations(
    modules: Iterable[Module], function: str, allowed: frozenset[str], owner: str
) -> list[Violation]:
    """Calls of `function` (by name or attribute) outside the allowed modules."""
    return [
        Violation(m.name, function, f"{m.path}:{node.lineno}: {function}() called here; "
                                    f"go through {owner}")
        for m in modules
        if m.name not in allowed
        for node in ast.walk(m.tree)
        if isinstance(node, ast.Call) and function in (
            getattr(node.func, "id", None), getattr(node.func, "attr", None))
    ]
