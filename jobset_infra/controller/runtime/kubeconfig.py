"""A kubeconfig whose credentials are static, read without kubernetes_asyncio.

kubernetes_asyncio's loader imports the library's whole generated client with it (1,232
modules, 63 MiB of a fresh interpreter, measured 2026-12-02), and a controller started from a
kubeconfig (the local cluster, the benchmarks, a developer's shell) kept all of it for its life:
it was most of why the idle controller held 117 MiB. Most kubeconfigs need none of that: a
server, a CA, and a token, a token file or a client certificate. Those are read here, with the
meaning kubectl gives them (paths relative to the kubeconfig's folder, `-data` fields base64).
Anything else (an exec plugin, an auth provider, basic auth, a proxy, several files in
KUBECONFIG, a field we do not know) is left to kubernetes_asyncio: `read_static` returns None.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

__all__ = ["StaticKubeconfig", "read_static"]

_USER_KEYS: Final = frozenset({"token", "tokenFile", "client-certificate",
                               "client-certificate-data", "client-key", "client-key-data"})
_CLUSTER_KEYS: Final = frozenset({"server", "certificate-authority",
                                  "certificate-authority-data", "insecure-skip-tls-verify"})


@dataclass(frozen=True)
class StaticKubeconfig:
    """What a context with static credentials says: where, whom to trust, who we are."""

    server: str
    ca_file: str | None = None
    ca_data: str | None = None  # PEM text
    insecure: bool = False
    token: str | None = None
    token_file: str | None = None
    cert_file: str | None = None
    cert_data: bytes | None = None  # PEM
    key_file: str | None = None
    key_data: bytes | None = None  # PEM


def read_static(path: str, context: str | None = None) -> StaticKubeconfig | None:
    """The context's static credentials, or None when kubernetes_asyncio must load it."""
    if os.pathsep in path:
        return None  # several files are merged: the library's rules
    try:
        config = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None  # the library words the error
    if not isinstance(config, dict):
        return None
    name = context or config.get("current-context")
    found = _named(config, "contexts", "context", name)
    if found is None:
        return None
    cluster = _named(config, "clusters", "cluster", found.get("cluster"))
    user = _named(config, "users", "user", found.get("user")) if found.get("user") else {}
    if cluster is None or user is None or not _static(cluster, user):
        return None
    try:
        return _credentials(cluster, user, Path(path).parent)
    except (binascii.Error, ValueError):
        return None


def _named(config: Mapping[str, Any], kind: str, key: str, name: object) -> dict[str, Any] | None:
    """The `key` mapping of the entry of `config[kind]` called `name`."""
    entries = config.get(kind)
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(key)
            return body if isinstance(body, dict) else None
    return None


def _static(cluster: Mapping[str, Any], user: Mapping[str, Any]) -> bool:
    server = cluster.get("server")
    has_cert = bool({"client-certificate", "client-certificate-data"} & set(user))
    has_key = bool({"client-key", "client-key-data"} & set(user))
    return (isinstance(server, str) and server.startswith(("https://", "http://"))
            and set(cluster) <= _CLUSTER_KEYS and set(user) <= _USER_KEYS
            and has_cert == has_key
            and all(isinstance(v, str) for k, v in {**cluster, **user}.items()
                    if k != "insecure-skip-tls-verify"))


def _credentials(cluster: Mapping[str, Any], user: Mapping[str, Any],
                 folder: Path) -> StaticKubeconfig:
    def path(value: str | None) -> str | None:
        return None if value is None else str(folder / value)  # an absolute value stays as is

    def data(value: str | None) -> bytes | None:
        return None if value is None else base64.b64decode(value, validate=True)

    ca = data(cluster.get("certificate-authority-data"))
    return StaticKubeconfig(
        server=str(cluster["server"]).rstrip("/"),
        ca_file=path(cluster.get("certificate-authority")),
        ca_data=ca.decode("ascii") if ca is not None else None,
        insecure=cluster.get("insecure-skip-tls-verify") is True,
        token=user.get("token"),
        token_file=path(user.get("tokenFile")),
        cert_file=path(user.get("client-certificate")),
        cert_data=data(user.get("client-certificate-data")),
        key_file=path(user.get("client-key")),
        key_data=data(user.get("client-key-data")),
    )
