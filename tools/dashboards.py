#!/usr/bin/env python3
"""Write the resilience dashboard's two forms into docs/dashboards/ from its one declaration.

`jobset_infra.manifests.dashboards.RESILIENCE` declares the panels and their PromQL once; this
writes its Grafana form (`resilience.json`) and its Cloud Monitoring form
(`resilience-cloud-monitoring.json`):

    .venv/bin/python tools/dashboards.py            # write them
    .venv/bin/python tools/dashboards.py --check    # fail if a file differs from a fresh render

tests/controller/runtime/test_dashboard.py makes the same check.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from jobset_infra.manifests.dashboards import RESILIENCE, cloud_monitoring, grafana

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "dashboards"


def rendered() -> dict[Path, str]:
    """Return each file's path and the text it should hold."""
    forms: dict[str, dict[str, Any]] = {
        "resilience.json": grafana(RESILIENCE),
        "resilience-cloud-monitoring.json": cloud_monitoring(RESILIENCE),
    }
    return {FOLDER / name: json.dumps(form, indent=2) + "\n" for name, form in forms.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a file is stale")
    args = parser.parse_args(argv)
    stale = [path for path, text in rendered().items()
             if not path.is_file() or path.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"{path}: differs from its declaration; run tools/dashboards.py", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(rendered()[path], encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
