"""Record what a real kube-apiserver answers to the metadata and Job-template cases below.

Not a test: run by hand against a real server (etcd + kube-apiserver v1.37.2 from /tmp/kbin, the
JobSet CRD installed), e.g. `python -m tests.api.real_server.record https://127.0.0.1:6443 TOKEN`.
It writes `answers.json` beside this file, which the tests compare our checks against: the real
server decides, this file is its recorded word.
"""

from __future__ import annotations

import json
import ssl
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.api.real_server.cases import JOB_CASES, METADATA_CASES, configmap, job, jobset

OUT = Path(__file__).with_name("answers.json")
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"


def _post(base: str, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(
        base + path + "?dryRun=All",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as resp:
            return {"code": resp.status, "causes": []}
    except urllib.error.HTTPError as err:
        status = json.loads(err.read())
        causes = (status.get("details") or {}).get("causes") or []
        return {
            "code": err.code,
            "message": status.get("message", ""),
            "causes": [{"field": c.get("field", ""), "message": c["message"]} for c in causes],
        }


def record(base: str, token: str) -> dict[str, Any]:
    answers: dict[str, Any] = {"server": "kube-apiserver v1.37.2", "metadata": {}, "jobs": {}}
    for case, meta in METADATA_CASES.items():
        answers["metadata"][case] = {
            "ConfigMap": _post(base, token, CONFIGMAPS, configmap(meta)),
            "JobSet": _post(base, token, JOBSETS, jobset(meta)),
        }
    for case, pod_spec in JOB_CASES.items():
        answers["jobs"][case] = _post(base, token, "/apis/batch/v1/namespaces/default/jobs",
                                      job(pod_spec))
    return answers


if __name__ == "__main__":
    OUT.write_text(json.dumps(record(sys.argv[1], sys.argv[2]), indent=1, sort_keys=True) + "\n")
