"""Fields' docstrings (the string literal written under a field in its class body), read from
the source, and put on a JSON schema as its properties' descriptions.

They are the CRD's field descriptions and the stack config reference's (docs/config.md).
pydantic can collect them itself (`use_attribute_docstrings`), but it does so for every model
class when the class is made, by finding and parsing each class's source: 0.04 s of CPU on every
import of the API models, which `jobset-infra validate` and the controller paid and only the CRD
generator reads. Here a source file is parsed once, when a generator asks.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import sys
from typing import Any

from pydantic import BaseModel

__all__ = ["add_field_docs", "attribute_docs"]

# Classes of these modules hold no field of ours (BaseModel's body documents its own names).
_NOT_OURS = ("pydantic", "builtins", "typing", "abc", "enum")


def attribute_docs(cls: type[Any]) -> dict[str, str]:
    """Field name -> its docstring as written, over the class's bases too (nearest wins)."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        module = sys.modules.get(klass.__module__)
        path = getattr(module, "__file__", None)
        if klass is object or klass.__module__.startswith(_NOT_OURS) or not path:
            continue
        found.update(_module_docs(path).get(klass.__qualname__, {}))
    return found


def add_field_docs(raw: dict[str, Any], root: type[BaseModel]) -> None:
    """Give each property of `raw` (root's JSON schema, with `$defs`) its field's docstring,
    cleaned as pydantic cleans it, where pydantic would put it; an explicit one wins."""
    defs = raw.get("$defs", {})
    for model in _models(root):
        schema = raw if model is root else defs.get(model.__name__)
        if schema is None:
            continue
        docs = attribute_docs(model)
        properties = schema.get("properties", {})
        for name, info in model.model_fields.items():
            alias = info.validation_alias if isinstance(info.validation_alias, str) else None
            prop = properties.get(alias or info.alias or name)
            if prop is not None and name in docs and info.description is None:
                prop.setdefault("description", inspect.cleandoc(docs[name]))


@functools.cache
def _module_docs(path: str) -> dict[str, dict[str, str]]:
    """Class qualname -> (field -> docstring) for the classes of one source file."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    found: dict[str, dict[str, str]] = {}
    todo = [(node, node.name) for node in tree.body if isinstance(node, ast.ClassDef)]
    while todo:
        node, qualname = todo.pop()
        found[qualname] = _class_docs(node)
        todo.extend((inner, f"{qualname}.{inner.name}") for inner in node.body
                    if isinstance(inner, ast.ClassDef))
    return found


def _class_docs(node: ast.ClassDef) -> dict[str, str]:
    docs: dict[str, str] = {}
    for field, after in itertools.pairwise(node.body):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[field.target.id] = after.value.value
    return docs


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """`root` and every model class its fields reach."""
    seen: list[type[BaseModel]] = []
    todo = [root]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.append(model)
        for info in model.model_fields.values():
            todo.extend(_model_classes(info.annotation))
    return seen


def _model_classes(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _model_classes(arg)]
