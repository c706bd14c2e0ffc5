"""The fault suite's request recorder: what it counts as a controller's write."""

from __future__ import annotations

from collections import Counter

from jobset_infra.sim.apiserver.routes import parse_request
from tests.reliability.chaos import Recorder

JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"


def test_a_dry_run_create_is_recorded_but_not_counted_as_a_write() -> None:
    # A replica started after another lost the Lease probes that the kind is served with a
    # dry-run create (controller/runtime/served.py); counted, it read as a write in the quiet
    # window after everything finished, under load only (when Leases are lost).
    recorder = Recorder()
    recorder(parse_request("POST", JOBSETS, {"dryRun": "All"}))
    recorder(parse_request("POST", JOBSETS, {}))
    recorder(parse_request("PUT", f"{JOBSETS}/a/status", {"dryRun": "All"}))
    assert recorder.writes == Counter({"jobsets": 1})
    assert ("jobset.x-k8s.io", "jobsets", "update", "status") in recorder.requests
