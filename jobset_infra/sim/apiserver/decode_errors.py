"""A request body the API server cannot decode, worded as it words it: the decoder's error
(Go's encoding/json wording) and a summary of the body, `(<first 30 bytes>)` for a
body that starts with `{` and their hex otherwise (apiserver's summarizeData)."""

from __future__ import annotations

import json

from jobset_infra.sim.apiserver.errors import StatusError, bad_request

_SUMMARY_BYTES = 30
_FIND_KIND = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
              'Kind string "json:\\"kind,omitempty\\"" }')
# Python's JSONDecodeError message -> what Go's scanner says after `invalid character 'c' `
_CONTEXTS = (
    ("Expecting property name enclosed in double quotes", "looking for beginning of object key "
     "string"),
    ("Expecting ':' delimiter", "after object key"),
    ("Expecting value", "looking for beginning of value"),
    ("Extra data", "after top-level value"),
)


def summarize(raw: bytes) -> str:
    if not raw:
        return "<empty>"
    more = " ..." if len(raw) > _SUMMARY_BYTES else ""
    head = raw[:_SUMMARY_BYTES]
    if raw[:1] == b"{":
        return head.decode(errors="replace") + more
    return head.hex() + more


def quote_char(char: str) -> str:
    """Go's quoteChar: the character in single quotes, escaped as strconv.Quote would."""
    if char == "'":
        return "'\\''"
    if char == '"':
        return "'\"'"
    if char.isprintable() and char.isascii():
        return f"'{char}'"
    return "'" + json.dumps(char)[1:-1] + "'"


def go_json_error(error: json.JSONDecodeError) -> str:
    """`invalid character 'n' looking for beginning of object key string`, or Go's words for a
    body that ends too soon."""
    if error.pos >= len(error.doc) or error.msg.startswith("Unterminated"):
        return "unexpected end of JSON input"
    char = error.doc[error.pos]
    context = next((words for prefix, words in _CONTEXTS if error.msg.startswith(prefix)), None)
    if context is None:  # "Expecting ',' delimiter": after an element of an object or array
        inside = error.doc[:error.pos].rstrip()
        context = ("after array element" if _innermost_open(inside) == "["
                   else "after object key:value pair")
    return f"invalid character {quote_char(char)} {context}"


def _innermost_open(text: str) -> str:
    depth: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            escaped = not escaped and char == "\\"
            in_string = char != '"' or escaped
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth.append(char)
        elif char in "]}" and depth:
            depth.pop()
    return depth[-1] if depth else ""


def unrecognized(kind: str, why: str, raw: bytes) -> StatusError:
    return bad_request(f"the object provided is unrecognized (must be of type {kind}): {why} "
                       f"({summarize(raw)})")


def json_body_error(kind: str, raw: bytes, error: json.JSONDecodeError) -> StatusError:
    return unrecognized(kind, "couldn't get version/kind; json parse error: "
                        f"{go_json_error(error)}", raw)


def not_an_object(kind: str, raw: bytes, value: object) -> StatusError:
    go_type = ("array" if isinstance(value, list) else "string" if isinstance(value, str)
               else "bool" if isinstance(value, bool) else "number")
    return unrecognized(kind, "couldn't get version/kind; json parse error: json: cannot "
                        f"unmarshal {go_type} into Go value of type {_FIND_KIND}", raw)
