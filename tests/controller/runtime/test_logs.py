"""The controller's JSON log lines: the fields a call passes and an exception's traceback."""

from __future__ import annotations

import json
import logging
import sys

from jobset_infra.controller.runtime.logs import FIELDS, JsonFormatter


def _record(exc_info: object = None) -> logging.LogRecord:
    record = logging.LogRecord("jobset", logging.ERROR, __file__, 1, "reconcile crashed", (),
                               exc_info)  # type: ignore[arg-type]
    setattr(record, FIELDS, {"namespace": "team", "name": "train"})
    return record


def test_a_line_carries_the_fields_of_the_call() -> None:
    entry = json.loads(JsonFormatter().format(_record()))
    assert entry["msg"] == "reconcile crashed" and entry["severity"] == "ERROR"
    assert (entry["namespace"], entry["name"]) == ("team", "train")
    assert "error" not in entry


def test_a_logged_exception_is_one_json_line_with_its_traceback() -> None:
    try:
        raise ValueError("replicas is 'two'")
    except ValueError:
        line = JsonFormatter().format(_record(sys.exc_info()))
    assert "\n" not in line
    error = json.loads(line)["error"]
    assert error.startswith("Traceback") and "ValueError: replicas is 'two'" in error
