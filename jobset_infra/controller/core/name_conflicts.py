"""Child Job names held by Jobs that are not the JobSet's children ("name squatters").

A child's name is fixed by the JobSet (see `identity.job_name`), so a Job of that name made by
someone else (by hand, by another controller, left by a JobSet deleted with
`--cascade=orphan`) makes every create of the child meet AlreadyExists, which a controller that
counts AlreadyExists as done takes for success: the JobSet then runs with a Job missing and
nothing says so (upstream logs a create error and retries forever). The core holds such creates
back and reports them as `JobNameConflict=True` with a Warning event naming the Jobs and the
fix, until the names are free. A holder that is being deleted (the child of an earlier JobSet
of the same name, foreground-deleted) is waited for without a word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jobset_infra.api import constants as c
from jobset_infra.controller.core.conditions import ConditionSpec
from jobset_infra.controller.core.types import CreateJob, NameHolder

__all__ = ["free_to_create", "name_conflict"]

_MAX_NAMED = 5


def free_to_create(
    pending: Sequence[CreateJob], taken: Mapping[str, NameHolder]
) -> tuple[tuple[CreateJob, ...], tuple[tuple[str, NameHolder], ...]]:
    """Split the Jobs to create into those whose names are free and the (name, holder) pairs
    that block the others."""
    free: list[CreateJob] = []
    blocked: list[tuple[str, NameHolder]] = []
    for create in pending:
        name = create.name
        holder = taken.get(name)
        if holder is None:
            free.append(create)
        else:
            blocked.append((name, holder))
    return tuple(free), tuple(blocked)


def name_conflict(blocked: Sequence[tuple[str, NameHolder]]) -> ConditionSpec:
    """JobNameConflict=True naming the holders (being-deleted ones aside), else False."""
    squatters = [(name, holder) for name, holder in blocked if not holder.deleting]
    if not squatters:
        return ConditionSpec(c.CONDITION_JOB_NAME_CONFLICT, "False", c.JOB_NAMES_FREE_REASON,
                             c.JOB_NAMES_FREE_MESSAGE)
    named = ", ".join(f"{name} ({_held_by(holder)})" for name, holder in squatters[:_MAX_NAMED])
    more = len(squatters) - _MAX_NAMED
    if more > 0:
        named += f" and {more} more"
    message = (
        f"Jobs that are not this jobset's hold names of its child Jobs: {named}; the jobset "
        "cannot create those children until they are deleted or renamed"
    )
    return ConditionSpec(c.CONDITION_JOB_NAME_CONFLICT, "True", c.JOB_NAME_TAKEN_REASON, message,
                         "Warning")


def _held_by(holder: NameHolder) -> str:
    return f"controlled by {holder.controller}" if holder.controller else "no controller"
