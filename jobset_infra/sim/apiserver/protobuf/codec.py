"""Kubernetes' protobuf wire format for the built-in kinds, to and from the JSON the sim stores.

A body is the 4-byte magic `k8s\\x00` and a `runtime.Unknown` whose `typeMeta` names the kind and
whose `raw` is the kind's message (the generated modules of `generate`). The JSON is the one a
real API server would produce from the same Go object: scalars the Go type holds by value and
tags `omitempty` are left out at their zero value (protobuf always carries them), and the
apimachinery types with their own JSON form (Time, MicroTime, Duration, Quantity, IntOrString,
RawExtension, FieldsV1, string-list wrappers) are converted to it.
"""

from __future__ import annotations

import base64
import importlib
import json
import re
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from jobset_infra.api.k8s_openapi import definition_for

JsonObj = dict[str, Any]
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_ZERO_TIME = -62135596800  # Go's time.Time{}.Unix(): an unset metav1.Time
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_NANOS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
          "h": 3600 * 10**9}


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf object this server knows."""


@cache
def _pool() -> Any:  # the default pool, once every generated module registered in it
    folder = Path(__file__).parent / "generated"
    for path in sorted(folder.glob("*_pb2.py")):
        importlib.import_module(f"{__package__}.generated.{path.stem}")
    return descriptor_pool.Default()  # type: ignore[no-untyped-call]


@cache
def _go_fields() -> dict[str, dict[str, str]]:
    from jobset_infra.sim.apiserver.protobuf.generated.go_fields import GO_FIELDS

    return GO_FIELDS


def message_class(full_name: str) -> type[Message]:
    try:
        descriptor = _pool().FindMessageTypeByName(full_name)
    except KeyError:
        raise ProtobufError(f"no protobuf message {full_name}") from None
    return message_factory.GetMessageClass(descriptor)


def message_name(api_version: str, kind: str) -> str | None:
    """The proto message of a built-in kind: its OpenAPI definition name, `io.k8s.` turned
    around to `k8s.io.`; meta.k8s.io kinds (Status, DeleteOptions, ...) live in meta/v1."""
    definition = definition_for(api_version, kind)
    if definition is None:
        if kind in ("Status", "DeleteOptions", "WatchEvent", "APIResourceList", "APIGroupList"):
            return f"{_META}.{kind}"
        return None
    return "k8s.io." + definition.removeprefix("io.k8s.")


def is_protobuf(content_type: str) -> bool:
    return content_type.split(";", maxsplit=1)[0].strip() == CONTENT_TYPE


# ---- protobuf -> JSON -----------------------------------------------------------------------


def _time(msg: Message, micro: bool) -> str | None:
    seconds, nanos = getattr(msg, "seconds"), getattr(msg, "nanos")  # noqa: B009
    if seconds == _ZERO_TIME or (seconds == 0 and nanos == 0 and not msg.ListFields()):
        return None
    moment = datetime.fromtimestamp(seconds, UTC)
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration_text(nanos: int) -> str:
    """Go's time.Duration.String() for the values API objects carry."""
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    seconds = f"{rest / 10**9:.9f}".rstrip("0").rstrip(".")
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"


def _raw_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise ProtobufError("an embedded object is not JSON") from None


def _intorstr(msg: Any) -> Any:
    return msg.strVal if msg.type == 1 else msg.intVal


_SPECIAL_TO_JSON: dict[str, Any] = {
    f"{_META}.Time": lambda m: _time(m, micro=False),
    f"{_META}.MicroTime": lambda m: _time(m, micro=True),
    f"{_META}.Duration": lambda m: _duration_text(m.duration),
    f"{_META}.FieldsV1": lambda m: _raw_json(m.Raw),
    "k8s.io.apimachinery.pkg.runtime.RawExtension": lambda m: _raw_json(m.raw),
    "k8s.io.apimachinery.pkg.api.resource.Quantity": lambda m: m.string,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _intorstr,
}


def _is_wrapper(descriptor: Any) -> bool:
    """Go named slices (`type ExtraValue []string`) are messages with one repeated `items`."""
    fields = descriptor.fields
    return (len(fields) == 1 and fields[0].name == "items"
            and fields[0].is_repeated
            and not descriptor.full_name.endswith("List"))


def _scalar_to_json(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    return value


def _value_to_json(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return to_json(value)
    return _scalar_to_json(field, value)


def to_json(msg: Message) -> Any:
    """A message as the JSON the Go type would serialise to."""
    descriptor = msg.DESCRIPTOR
    special = _SPECIAL_TO_JSON.get(descriptor.full_name)
    if special is not None:
        return special(msg)
    if _is_wrapper(descriptor):
        return [_value_to_json(descriptor.fields[0], v) for v in getattr(msg, "items")]  # noqa: B009
    flags = _go_fields().get(descriptor.full_name, {})
    out: JsonObj = {}
    for field, value in msg.ListFields():
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = {k: _value_to_json(value_field, v) for k, v in value.items()}
        elif field.is_repeated:
            out[field.name] = [_value_to_json(field, v) for v in value]
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            converted = to_json(value)
            if converted is not None:
                out[field.name] = converted
        elif value != field.default_value or flags.get(field.name):
            out[field.name] = _scalar_to_json(field, value)
    return out


# ---- JSON -> protobuf -----------------------------------------------------------------------


def _parse_time(text: Any) -> tuple[int, int]:
    if not isinstance(text, str):
        raise ProtobufError(f"a time must be a string, got {text!r}")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ProtobufError(f"not an RFC 3339 time: {text!r}") from None
    return int(moment.timestamp()), moment.microsecond * 1000


def _parse_duration(text: Any) -> int:
    total, rest = 0, str(text).lstrip("-")
    for number, unit in _DURATION.findall(rest):
        total += int(float(number) * _NANOS[unit])
    return -total if str(text).startswith("-") else total


def _set_time(msg: Any, value: Any) -> None:
    msg.seconds, msg.nanos = _parse_time(value)


def _set_intorstr(msg: Any, value: Any) -> None:
    if isinstance(value, str):
        msg.type, msg.strVal = 1, value
    else:
        msg.type, msg.intVal = 0, int(value)


_SPECIAL_FROM_JSON: dict[str, Any] = {
    f"{_META}.Time": _set_time,
    f"{_META}.MicroTime": _set_time,
    f"{_META}.Duration": lambda m, v: setattr(m, "duration", _parse_duration(v)),
    f"{_META}.FieldsV1": lambda m, v: setattr(m, "Raw", json.dumps(v).encode()),
    "k8s.io.apimachinery.pkg.runtime.RawExtension":
        lambda m, v: setattr(m, "raw", json.dumps(v).encode()),
    "k8s.io.apimachinery.pkg.api.resource.Quantity": lambda m, v: setattr(m, "string", str(v)),
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _set_intorstr,
}


def _scalar_from_json(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64decode(value)
    if field.cpp_type in (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_INT64,
                          FieldDescriptor.CPPTYPE_UINT32, FieldDescriptor.CPPTYPE_UINT64):
        return int(value)
    if field.cpp_type == FieldDescriptor.CPPTYPE_DOUBLE:
        return float(value)
    return value


def from_json(msg: Message, value: Any) -> None:
    """Fill `msg` from JSON (fields the message lacks, such as apiVersion and kind, skipped)."""
    descriptor = msg.DESCRIPTOR
    special = _SPECIAL_FROM_JSON.get(descriptor.full_name)
    if special is not None:
        special(msg, value)
        return
    if _is_wrapper(descriptor):
        value = {"items": value}
    if not isinstance(value, dict):
        raise ProtobufError(f"{descriptor.full_name} needs an object, got {value!r}")
    msg.SetInParent()
    for key, item in value.items():
        field = descriptor.fields_by_name.get(key)
        if field is None or item is None:
            continue
        target = getattr(msg, key)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            for k, v in item.items():
                if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                    from_json(target[k], v)
                else:
                    target[k] = _scalar_from_json(value_field, v)
        elif field.is_repeated:
            for element in item:
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    from_json(target.add(), element)
                else:
                    target.append(_scalar_from_json(field, element))
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            from_json(target, item)
        else:
            setattr(msg, key, _scalar_from_json(field, item))


# ---- the envelope ---------------------------------------------------------------------------


def _unknown() -> Any:
    return message_class("k8s.io.apimachinery.pkg.runtime.Unknown")()


def decode(data: bytes) -> JsonObj:
    """A protobuf body as the JSON object a real server decodes it to (apiVersion, kind first)."""
    if not data.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf magic k8s\\0")
    envelope = _unknown()
    try:
        envelope.ParseFromString(data[len(MAGIC):])
    except DecodeError as err:
        raise ProtobufError(f"cannot parse the protobuf envelope: {err}") from None
    api_version, kind = envelope.typeMeta.apiVersion, envelope.typeMeta.kind
    name = message_name(api_version, kind)
    if name is None:
        raise ProtobufError(f"no protobuf message for {kind} ({api_version})")
    msg = message_class(name)()
    try:
        msg.ParseFromString(envelope.raw)
    except DecodeError as err:
        raise ProtobufError(f"cannot parse a {kind}: {err}") from None
    body = to_json(msg)
    return {"kind": kind, "apiVersion": api_version, **body}


def encode(obj: JsonObj) -> bytes:
    """A JSON object of a built-in kind in the protobuf envelope (ProtobufError otherwise)."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    name = message_name(api_version, kind)
    if name is None:
        raise ProtobufError(f"no protobuf message for {kind} ({api_version})")
    msg = message_class(name)()
    from_json(msg, obj)
    envelope = _unknown()
    envelope.typeMeta.apiVersion, envelope.typeMeta.kind = api_version, kind
    envelope.raw = msg.SerializeToString()
    envelope.contentEncoding, envelope.contentType = "", ""
    return MAGIC + bytes(envelope.SerializeToString())


def can_encode(obj: Any) -> bool:
    return isinstance(obj, dict) and message_name(
        str(obj.get("apiVersion", "")), str(obj.get("kind", ""))) is not None
