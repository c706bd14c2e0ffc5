"""Upstream's `JobCreationFailed` Warning for a JobSet whose Job template the API server refuses.

Upstream creates the Jobs, the API server refuses each one, and the controller records a Warning
`JobCreationFailed` with the refusal (`job "<name>" creation failed with error: <answer>`). We
find the refusal before creating anything (`api.job_template.child_job_errors`) and report it as
the condition `InvalidSpec`; this module words the same finding as the event upstream's users
key their alerts on, shaped as the API server's answer for the replicated job's first Job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from jobset_infra.api.errors import FieldError
from jobset_infra.api.job_names import child_job_name
from jobset_infra.api.job_template import JOBS_REFUSED

__all__ = ["job_creation_failed_message"]

_TEMPLATE_PATH = re.compile(r"^spec\.replicatedJobs\[(\d+)\]\.template\.")
_SUFFIX = f" ({JOBS_REFUSED})"


def job_creation_failed_message(
    raw_jobset: Mapping[str, Any], errors: Sequence[FieldError]
) -> str | None:
    """The event message for the first replicated job whose Jobs the API server refuses, or None.

    Only the errors of that replicated job are listed, with the Job's own field paths, as the
    API server words a refused Job: `Job.batch "<name>" is invalid: <field>: <message>`.
    """
    refused = [
        (m, e)
        for e in errors
        if e.message.endswith(_SUFFIX) and (m := _TEMPLATE_PATH.match(e.path))
    ]
    if not refused:
        return None
    index = int(refused[0][0].group(1))
    causes = [
        f"{e.path[m.end():]}: {e.message.removesuffix(_SUFFIX)}"
        for m, e in refused
        if int(m.group(1)) == index
    ]
    name = child_job_name(_jobset_name(raw_jobset), _rjob_name(raw_jobset, index), 0)
    detail = causes[0] if len(causes) == 1 else "[" + ", ".join(causes) + "]"
    return f'job "{name}" creation failed with error: Job.batch "{name}" is invalid: {detail}'


def _jobset_name(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""


def _rjob_name(raw: Mapping[str, Any], index: int) -> str:
    spec = raw.get("spec")
    rjobs = spec.get("replicatedJobs") if isinstance(spec, Mapping) else None
    if isinstance(rjobs, list) and index < len(rjobs) and isinstance(rjobs[index], Mapping):
        return str(rjobs[index].get("name", ""))
    return ""
