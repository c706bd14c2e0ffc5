"""Arguments that may be another resource's output: checked now when plain, when they resolve
when not.

A component validates its arguments with the pure checks of `tpu`, `manifests` and `api`, which
want plain values. `split_inputs` takes the arguments a user may wire in from elsewhere (a VPC's
self link, a service account's email, an image digest) out of the mapping: a plain value stays
and is checked at construction as before (a wrong one fails `pulumi preview`, naming the field);
an `Output` (or any awaitable) is replaced by a stand-in that passes the checks, and `checked`
later runs the same check on the resolved value inside `apply`. Pulumi resolves an output during
preview whenever it is known then (config, an existing resource), so a wrong value still fails
preview there; a value only known after creation fails `pulumi up` before the resources that use
it, with the same message naming the field.

Pure of Pulumi except `once_resolved`, `checked` and `is_deferred`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pulumi

__all__ = ["Deferred", "checked", "is_deferred", "once_resolved", "split_inputs"]

T = TypeVar("T")


def is_deferred(value: object) -> bool:
    """Whether `value` is known only later: a Pulumi Output or another awaitable."""
    return isinstance(value, pulumi.Output) or inspect.isawaitable(value)


@dataclass(frozen=True)
class Deferred:
    """The arguments `split_inputs` took out: field name -> the user's Output."""

    values: Mapping[str, Any] = field(default_factory=dict)

    def __contains__(self, name: object) -> bool:
        return name in self.values

    def get(self, name: str, plain: Any) -> pulumi.Input[Any]:
        """The user's Output for `name`, else the plain value given."""
        return self.values.get(name, plain)


def split_inputs(given: Mapping[str, Any], stand_ins: Mapping[str, Any]
                 ) -> tuple[dict[str, Any], Deferred]:
    """`given` with each deferred value of a `stand_ins` field replaced by its stand-in, and
    the deferred values themselves. Fields not in `stand_ins` are left as they are (a deferred
    value there fails the plain check, naming the field)."""
    plain = dict(given)
    deferred = {name: plain[name] for name in stand_ins if is_deferred(plain.get(name))}
    plain.update({name: stand_ins[name] for name in deferred})
    return plain, Deferred(deferred)


def once_resolved(outputs: Sequence[pulumi.Input[Any]], value: T) -> pulumi.Input[T]:
    """`value`, once every output in `outputs` has resolved, and depending on them: how a
    component waits for another that a program in another language hands it by its outputs
    (`ready`) rather than as an object. `value` itself when there is nothing to wait for."""
    if not outputs:
        return value
    return pulumi.Output.all(*outputs).apply(lambda _: value)


def checked(value: pulumi.Input[T], check: Callable[[T], object]) -> pulumi.Output[T]:
    """`value` as an Output that runs `check` on the resolved value first; `check` raises an
    error naming the field (which then fails the update, or the preview when known then)."""

    def run(resolved: T) -> T:
        check(resolved)
        return resolved

    return pulumi.Output.from_input(value).apply(run)
