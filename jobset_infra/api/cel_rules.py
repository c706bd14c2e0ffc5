"""CEL `x-kubernetes-validations` the CRD carries besides the per-field ones in `models`.

Each entry maps a schema path (dotted, `[]` for list items) to rules. Rules here express webhook
checks of upstream (reference §4.2-4.3) that CEL can state, so the API server enforces them
without an admission webhook. Every rule is compiled and exercised in tests/api/test_cel_rules.py.
"""

from __future__ import annotations

from typing import Any

from jobset_infra.api import constants as c


def extra_rules() -> dict[str, list[dict[str, Any]]]:
    """Schema path -> CEL rules to append there."""
    return {
        "spec.volumeClaimPolicies.[]": [
            {
                "rule": "!has(self.templates) || self.templates.all(t, !has(t.metadata) || "
                "!has(t.metadata.namespace) || size(t.metadata.namespace) == 0)",
                "message": c.VCP_NAMESPACE_MESSAGE,
            }
        ],
    }
