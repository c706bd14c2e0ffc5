"""Structured logs: one JSON object per line, with controller-runtime's keys.

Reconcile logs carry `controller`, `namespace`, `name` and `reconcileID` (passed as `extra=`),
so `kubectl logs | jq 'select(.name=="my-jobset")'` follows one JobSet across reconciles.
Each line also carries the two fields Cloud Logging reads from a JSON log line (GKE's logging
agent): `severity` (DEBUG, INFO, WARNING, ERROR, CRITICAL) and `message`, beside
controller-runtime's `level` and `msg`, so the Logs Explorer shows the level and the text.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
from typing import Any, TextIO

from jobset_infra.api.controller_config import LogFormat, LogLevel

FIELDS = "fields"  # log.info(msg, extra={FIELDS: {"name": ..., "namespace": ...}})
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        entry: dict[str, Any] = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "severity": record.levelname,
            "logger": record.name,
            "msg": message,
            "message": message,
        }
        for key, value in vars(record).items():
            if key == FIELDS and isinstance(value, dict):
                entry.update(value)  # reserved names such as "name" travel inside FIELDS
            elif key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(
    level: LogLevel = LogLevel.INFO, fmt: LogFormat = LogFormat.JSON, stream: TextIO | None = None
) -> None:
    """Route the root logger to `stream` (stderr) in the chosen format."""
    handler = logging.StreamHandler(stream or sys.stderr)
    if fmt is LogFormat.JSON:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.value.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
