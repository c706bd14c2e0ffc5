"""Report what upstream's validating webhook would have rejected.

There is no admission webhook here: the CRD's schema and CEL rules reject most bad JobSets, but
not all of upstream's checks can be written as CRD rules (and a JobSet may predate the CRD or
bypass it). So every pass runs the API's own validation (`api.validation.validate`, upstream's
ValidateCreate) on the defaulted JobSet and reports the result as the condition `InvalidSpec`:
True with every problem and its field while there are any (plus a Warning event when that
changes), False once there are none. Reconciling continues either way: refusing to act on a
JobSet that already runs would be worse than running it as written.
"""

from __future__ import annotations

from collections.abc import Sequence

from jobset_infra.api import constants as c
from jobset_infra.api.defaults import default
from jobset_infra.api.errors import FieldError
from jobset_infra.api.models import JobSet
from jobset_infra.api.validation import validate
from jobset_infra.controller.core.conditions import ConditionSpec
from jobset_infra.controller.core.types import CoreConfig

__all__ = ["describe", "spec_condition", "spec_problems"]

_MAX_LISTED_ERRORS = 5


def describe(errors: list[FieldError], consequence: str) -> str:
    """Return one line naming the bad fields, how to check them, and what the controller does."""
    shown = "; ".join(str(e) for e in errors[:_MAX_LISTED_ERRORS]) or "unparsable object"
    more = len(errors) - _MAX_LISTED_ERRORS
    if more > 0:
        shown += f"; and {more} more"
    return (
        f"{shown}. Fix these fields (`jobset-infra validate` checks a JobSet file); {consequence}"
    )


def spec_problems(js: JobSet, config: CoreConfig) -> list[FieldError]:
    """Return what upstream's webhook would reject in `js`, with the controller's gates. Pure."""
    return validate(default(js), feature_gates=config.gates)


def spec_condition(
    js: JobSet, config: CoreConfig, known: Sequence[FieldError] | None = None
) -> ConditionSpec:
    """Return InvalidSpec=True naming the problems, or InvalidSpec=False when there are none.

    `known`: the problems already found for this generation (the runtime caches them), so the
    check, which evaluates the CRD's CEL rules, runs once per spec change, not every pass.
    """
    errors = list(known) if known is not None else spec_problems(js, config)
    if not errors:
        return ConditionSpec(
            c.CONDITION_INVALID_SPEC, "False", c.VALID_SPEC_REASON, c.VALID_SPEC_MESSAGE
        )
    message = describe(errors, "the controller keeps reconciling it as written")
    return ConditionSpec(
        c.CONDITION_INVALID_SPEC, "True", c.INVALID_SPEC_REASON, message, "Warning"
    )
