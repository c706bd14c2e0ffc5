"""A static index of `jobset_infra`: modules, their imports, strings and sizes, read with `ast`.

Nothing here imports the package under test, so a guard test sees the code as written (including
imports that only run inside a function) and a broken module cannot hide a violation.
Every function is pure over a `Module` (name + parsed source), so the checkers can be tested on
small synthetic modules as well as on the real tree.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "jobset_infra"


@dataclass(frozen=True)
class Module:
    """One Python module of the package: dotted name, path relative to the repo, parsed source."""

    name: str
    path: str
    source: str = field(repr=False)

    @property
    def tree(self) -> ast.Module:
        return _parse(self.source)

    @property
    def is_package(self) -> bool:
        return self.path.endswith("__init__.py")

    @property
    def line_count(self) -> int:
        return len(self.source.splitlines())


@cache
def _parse(source: str) -> ast.Module:
    return ast.parse(source)


def module_from_source(name: str, source: str, *, package: bool = False) -> Module:
    """A module built from a string, for testing the checkers themselves."""
    path = name.replace(".", "/") + ("/__init__.py" if package else ".py")
    return Module(name=name, path=path, source=source)


@cache
def package_modules() -> tuple[Module, ...]:
    """Every module under jobset_infra/, sorted by dotted name."""
    modules = []
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        rel = path.relative_to(REPO)
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules.append(Module(".".join(parts), rel.as_posix(), path.read_text(encoding="utf-8")))
    return tuple(sorted(modules, key=lambda m: m.name))


def collect_test_files(*folders: str) -> list[Module]:
    """The test_*.py files under `folders` (paths relative to the repository)."""
    found = []
    for folder in folders:
        for path in sorted((REPO / folder).rglob("test_*.py")):
            rel = path.relative_to(REPO)
            name = ".".join(rel.with_suffix("").parts)
            found.append(Module(name, rel.as_posix(), path.read_text(encoding="utf-8")))
    return found


def modules_under(*prefixes: str) -> list[Module]:
    """The modules whose dotted name is one of `prefixes` or lies below one."""
    return [m for m in package_modules() if any(within(m.name, p) for p in prefixes)]


def within(name: str, prefix: str) -> bool:
    """True when dotted `name` is `prefix` or a submodule of it."""
    return name == prefix or name.startswith(prefix + ".")


# -- imports ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    """One import statement's target as an absolute dotted module name.

    `lazy` is true when it only runs when a function is called (an import statement inside a
    function, or `importlib.import_module` of a string); such imports are how composition roots
    keep start-up light, and the rules allow some of them where a module-level one is forbidden.
    """

    source: str
    target: str
    line: int
    lazy: bool


def imports_of(module: Module, known: frozenset[str] | None = None) -> tuple[Import, ...]:
    """All imports of `module`, static ones and `importlib.import_module("jobset_infra...")`.

    `known` is the set of our module names (default: the real tree's), to tell
    `from pkg import module` from `from pkg import name` and to recognise module names in strings.
    """
    return _imports_of(module, known_module_names() if known is None else known)


@cache
def _imports_of(module: Module, known: frozenset[str]) -> tuple[Import, ...]:
    found: list[Import] = []
    for node, in_function in _walk_with_scope(module.tree):
        # A module's name in a string is imported later, by importlib, when a function runs;
        # only `import_module("...")` written at module level imports at import time.
        line = getattr(node, "lineno", 0)
        lazy = in_function or isinstance(node, ast.Constant)
        found.extend(Import(module.name, t, line, lazy) for t in _targets(module, node, known))
        if not in_function and _is_eager_import_module(node, known):
            assert isinstance(node, ast.Call) and isinstance(node.args[0], ast.Constant)
            found.append(Import(module.name, str(node.args[0].value), line, False))
    return tuple(found)


@cache
def known_module_names() -> frozenset[str]:
    return frozenset(m.name for m in package_modules())


def _targets(module: Module, node: ast.AST, known: frozenset[str]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = _absolute_base(module, node)
        for alias in node.names:
            # `from pkg import mod` imports the submodule when there is one.
            candidate = f"{base}.{alias.name}"
            yield candidate if candidate in known else base
    elif isinstance(node, ast.Constant) and node.value in known and node.value != module.name:
        # Dynamic imports name their module in a string (`importlib.import_module(_MODULE)`):
        # any string that is exactly the dotted name of one of our modules counts as an edge.
        yield str(node.value)


def _absolute_base(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    parts = package.split(".")
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _walk_with_scope(tree: ast.AST) -> Iterator[tuple[ast.AST, bool]]:
    """Every node with whether it sits inside a function body (so runs only when called)."""
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        yield node, in_function
        inner = in_function or isinstance(node, _FUNCTION_NODES)
        stack.extend((c, inner) for c in ast.iter_child_nodes(node) if not _is_logger(c))


def _is_eager_import_module(node: ast.AST, known: frozenset[str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and dotted(node.func).endswith("import_module")
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in known
    )


def _is_logger(node: ast.AST) -> bool:
    """`logging.getLogger("jobset_infra.x")` names a logger, not a module to import."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "getLogger"
    )


def import_aliases(module: Module) -> dict[str, str]:
    """Local name -> the fully qualified name it was imported as, anywhere in the module."""
    aliases: dict[str, str] = {}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                aliases[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def top_level_package(target: str) -> str:
    return target.partition(".")[0]


# -- strings, names, sizes -------------------------------------------------------------------


def string_literals(module: Module) -> Iterator[tuple[int, str]]:
    """(line, text) of every string constant that is not a docstring (docs may quote keys)."""
    docstrings = {id(doc) for doc in _docstring_nodes(module.tree)}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
            id(node) not in docstrings
        ):
            yield node.lineno, node.value


def _docstring_nodes(tree: ast.Module) -> Iterator[ast.Constant]:
    owners: Iterable[ast.AST] = [
        tree,
        *(
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ),
    ]
    for owner in owners:
        body = getattr(owner, "body", [])
        first = body[0].value if body and isinstance(body[0], ast.Expr) else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            yield first


def dotted(node: ast.AST) -> str:
    """`a.b.c` for a Name/Attribute chain, '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def functions(module: Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(module.tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def function_length(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from `def` to the last line of the body (decorators not counted)."""
    return (node.end_lineno or node.lineno) - node.lineno + 1


def declared_all(module: Module) -> list[str] | None:
    """The literal `__all__` of a module, or None when it has none."""
    for node in module.tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return [str(v) for v in ast.literal_eval(value)]
    return None


def public_definitions(module: Module) -> set[str]:
    """Public names a module defines at top level (def, class, assignment; imports in a package).

    A package `__init__` exists to re-export, so its imported names count as its definitions.
    """
    names: set[str] = set()
    for node in module.tree.body:
        names.update(_bound_names(node, count_imports=module.is_package))
    return {n for n in names if not n.startswith("_")}


def bound_names(module: Module) -> set[str]:
    """Every name the module binds at top level, imports included."""
    names: set[str] = set()
    for node in module.tree.body:
        names.update(_bound_names(node, count_imports=True))
    return names


def _bound_names(node: ast.stmt, *, count_imports: bool) -> Iterator[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Assign):
        yield from (t.id for t in node.targets if isinstance(t, ast.Name))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        yield node.target.id
    elif count_imports and isinstance(node, ast.ImportFrom) and node.module != "__future__":
        yield from (alias.asname or alias.name for alias in node.names)
    elif count_imports and isinstance(node, ast.Import):
        yield from ((alias.asname or alias.name).partition(".")[0] for alias in node.names)
    elif isinstance(node, ast.If):
        # `if TYPE_CHECKING:` blocks bind names too.
        for child in node.body:
            yield from _bound_names(child, count_imports=count_imports)
