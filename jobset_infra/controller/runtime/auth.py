"""Where the API server is and how to authenticate: in-cluster service account or a kubeconfig.

A kubeconfig with static credentials (a server, a CA, a token, token file or client
certificate) is read directly (`kubeconfig.read_static`); any other is delegated to
kubernetes_asyncio's config loaders (a maintained library that runs exec plugins such as
gke-gcloud-auth-plugin and auth providers), whose import costs 60 MiB for the process's life, so
only a kubeconfig that needs it pays it. We keep only the result and ask the loader again when a
token expires. Requests themselves go through our lean aiohttp client (`kube.py`).
"""

from __future__ import annotations

import datetime
import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobset_infra.controller.runtime.kubeconfig import StaticKubeconfig, read_static

IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
IN_CLUSTER_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
TOKEN_FILE_REFRESH = 60.0  # projected service-account tokens rotate; re-read like client-go


class AuthError(RuntimeError):
    """No usable cluster access; the message says what was tried and how to fix it."""


TokenSource = Callable[[bool], Awaitable[str | None]]  # force_refresh -> "Bearer ..." or None


@dataclass
class ClusterAccess:
    host: str  # scheme://host:port, no trailing slash
    ssl_context: ssl.SSLContext | None = None  # None for plain http
    token_source: TokenSource | None = None
    headers: dict[str, str] = field(default_factory=dict)

    async def authorization(self, force_refresh: bool = False) -> str | None:
        return await self.token_source(force_refresh) if self.token_source else None


def for_url(url: str, token: str | None = None) -> ClusterAccess:
    """Plain access to a URL (the sim, tests)."""

    async def static(_: bool) -> str | None:
        return f"Bearer {token}" if token else None

    return ClusterAccess(host=url.rstrip("/"), token_source=static if token else None)


async def load(kubeconfig: str | None = None, context: str | None = None) -> ClusterAccess:
    """In-cluster when no kubeconfig is given and we run in a Pod; else the kubeconfig
    (`kubeconfig`, then $KUBECONFIG, then ~/.kube/config)."""
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster()
    path = kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    if not os.path.exists(path.split(os.pathsep)[0]):
        raise AuthError(
            f"no kubeconfig at {path} and not running in a cluster; pass --kubeconfig=PATH "
            "or run inside a Pod with a service account"
        )
    return await from_kubeconfig(path, context)


def in_cluster(
    token_file: str = IN_CLUSTER_TOKEN,
    ca_file: str = IN_CLUSTER_CA,
    clock: Callable[[], float] = time.monotonic,
) -> ClusterAccess:
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host or not os.path.exists(token_file):
        raise AuthError(
            "in-cluster config needs KUBERNETES_SERVICE_HOST and a service-account token at "
            f"{token_file}; pass --kubeconfig when running outside a cluster"
        )
    if ":" in host:
        host = f"[{host}]"
    return ClusterAccess(
        host=f"https://{host}:{port}",
        ssl_context=ssl.create_default_context(cafile=ca_file),
        token_source=_token_file_source(token_file, clock),
    )


def _token_file_source(token_file: str, clock: Callable[[], float]) -> TokenSource:
    """The token in a file, read again every TOKEN_FILE_REFRESH seconds (it rotates)."""
    cache: dict[str, Any] = {"token": None, "read_at": -1e18}

    async def token(force: bool) -> str | None:
        if force or clock() - cache["read_at"] >= TOKEN_FILE_REFRESH:
            with open(token_file, encoding="utf-8") as handle:
                cache["token"] = handle.read().strip()
            cache["read_at"] = clock()
        return f"Bearer {cache['token']}"

    return token


async def from_kubeconfig(path: str, context: str | None = None) -> ClusterAccess:
    """A kubeconfig's access: read directly when its credentials are static, else resolved
    with kubernetes_asyncio (exec plugins, auth providers)."""
    static = read_static(path, context)
    if static is not None:
        try:
            return from_static(static)
        except (OSError, ssl.SSLError) as err:
            raise AuthError(f"cannot load kubeconfig {path}: {err}") from None
    return await _from_library(path, context)


def from_static(config: StaticKubeconfig, clock: Callable[[], float] = time.monotonic
                ) -> ClusterAccess:
    """Access from a kubeconfig's static credentials."""
    if config.token_file is not None:
        token_source: TokenSource | None = _token_file_source(config.token_file, clock)
    elif config.token is not None:
        bearer = f"Bearer {config.token}"

        async def static(_: bool) -> str | None:
            return bearer

        token_source = static
    else:
        token_source = None
    https = config.server.startswith("https://")
    return ClusterAccess(host=config.server, token_source=token_source,
                         ssl_context=_static_ssl_context(config) if https else None)


def _static_ssl_context(config: StaticKubeconfig) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=config.ca_file, cadata=config.ca_data)
    if config.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if config.cert_data is not None or config.key_data is not None:
        with tempfile.TemporaryDirectory(prefix="jobset-kubeconfig-") as folder:
            cert = _written(Path(folder) / "client.crt", config.cert_data, config.cert_file)
            key = _written(Path(folder) / "client.key", config.key_data, config.key_file)
            context.load_cert_chain(cert, key)
    elif config.cert_file is not None:
        context.load_cert_chain(config.cert_file, config.key_file)
    return context


def _written(path: Path, data: bytes | None, fallback: str | None) -> str:
    """`data` in a private file at `path` (ssl loads certificates from files only)."""
    if data is None:
        return fallback or ""
    path.touch(mode=0o600)
    path.write_bytes(data)
    return str(path)


async def _from_library(path: str, context: str | None) -> ClusterAccess:
    """Resolve a kubeconfig with kubernetes_asyncio (exec plugins included)."""
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import kube_config

    configuration = Configuration()
    try:
        loader = await kube_config.load_kube_config(
            config_file=path,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except Exception as err:  # the library raises ConfigException, OSError, KeyError, ...
        raise AuthError(f"cannot load kubeconfig {path}: {err}") from None
    host = str(configuration.host).rstrip("/")
    bearer = configuration.api_key.get("BearerToken") or configuration.api_key.get("authorization")
    token_source = _loader_token_source(loader, bearer) if bearer else None
    return ClusterAccess(
        host=host,
        ssl_context=_ssl_context(configuration) if host.startswith("https") else None,
        token_source=token_source,
    )


def _loader_token_source(loader: Any, initial: str) -> TokenSource:
    """Serve the loader's token; re-run the exec plugin or token refresh when it has expired."""
    state = {"token": initial}

    async def token(force: bool) -> str | None:
        expiry = getattr(loader, "exec_plugin_expiry", None)
        expired = expiry is not None and _expired(expiry)
        if force or expired:
            user = getattr(loader, "_user", None)
            if user is not None and "exec" in user:
                if force and hasattr(loader, "exec_plugin_expiry"):
                    del loader.exec_plugin_expiry
                await loader.load_from_exec_plugin()
            elif getattr(loader, "provider", None) == "gcp":
                await loader.load_gcp_token()
            state["token"] = getattr(loader, "token", state["token"])
        return state["token"]

    return token


def _expired(expiry: datetime.datetime) -> bool:
    now = datetime.datetime.now(tz=expiry.tzinfo or datetime.UTC)
    if expiry.tzinfo is None:
        now = now.replace(tzinfo=None)
    # Refresh a little early so a request never carries a token that expires in flight.
    return now >= expiry - datetime.timedelta(seconds=10)


def _ssl_context(configuration: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    if configuration.verify_ssl is False:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
