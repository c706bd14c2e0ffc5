"""A CEL rule that fails at run time is reported as cel-go words it, never with the Python
engine's internals (issue 16, finding 5)."""

from __future__ import annotations

import pytest

from jobset_infra.api.crd.cel import Rule


@pytest.mark.parametrize(
    ("rule", "value", "cause"),
    [
        pytest.param("self.missing > 0 && true", {"present": 1}, "no such key: missing",
                     id="an error inside && names the missing key"),
        pytest.param("self.a / self.b > 0", {"a": 1, "b": 0}, "division by zero",
                     id="division by zero"),
        pytest.param("self.a + 9223372036854775807 > 0", {"a": 1}, "integer overflow",
                     id="overflow"),
        pytest.param("self.items[3] == 1", {"items": [1]}, "index out of bounds",
                     id="index out of range"),
    ],
)
def test_a_runtime_error_is_worded_as_cel_go_words_it(rule: str, value: object,
                                                      cause: str) -> None:
    error = Rule.from_schema({"rule": rule}).evaluate(value, None, "spec", "object")
    assert error is not None
    assert error.message.endswith(f"{cause} evaluating rule: {rule}")
    for leak in ("celpy", "<class", "CELEvalError", "applied to"):
        assert leak not in error.message
