"""A kubeconfig with static credentials is read directly; anything else is left to
kubernetes_asyncio (read_static says None)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset_infra.controller.runtime import auth
from jobset_infra.controller.runtime.kubeconfig import StaticKubeconfig, read_static

PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def kubeconfig(folder: Path, cluster: dict[str, Any], user: dict[str, Any],
               current: str = "ctx") -> Path:
    path = folder / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
    }))
    return path


@pytest.mark.parametrize(("cluster", "user", "want"), [
    pytest.param({"server": "https://10.0.0.1:6443/", "certificate-authority": "ca.crt"},
                 {"token": "t0k"},
                 {"server": "https://10.0.0.1:6443", "ca_file": "{folder}/ca.crt", "token": "t0k"},
                 id="a token and a CA file relative to the kubeconfig"),
    pytest.param({"server": "https://h", "certificate-authority-data":
                  base64.b64encode(PEM).decode()},
                 {"client-certificate-data": base64.b64encode(PEM).decode(),
                  "client-key": "/abs/client.key"},
                 {"server": "https://h", "ca_data": PEM.decode(), "cert_data": PEM,
                  "key_file": "/abs/client.key"},
                 id="client certificate data and an absolute key path"),
    pytest.param({"server": "http://127.0.0.1:8080"}, {"tokenFile": "tok"},
                 {"server": "http://127.0.0.1:8080", "token_file": "{folder}/tok"},
                 id="a token file on plain http"),
    pytest.param({"server": "https://h", "insecure-skip-tls-verify": True}, {},
                 {"server": "https://h", "insecure": True}, id="no user, TLS unverified"),
])
def test_static_credentials_are_read(tmp_path: Path, cluster: dict[str, Any],
                                     user: dict[str, Any], want: dict[str, Any]) -> None:
    expected = {k: v.format(folder=tmp_path) if isinstance(v, str) else v
                for k, v in want.items()}
    assert read_static(str(kubeconfig(tmp_path, cluster, user))) == StaticKubeconfig(**expected)


@pytest.mark.parametrize(("cluster", "user"), [
    pytest.param({"server": "https://h"}, {"exec": {"command": "gke-gcloud-auth-plugin"}},
                 id="an exec plugin"),
    pytest.param({"server": "https://h"}, {"auth-provider": {"name": "gcp"}},
                 id="an auth provider"),
    pytest.param({"server": "https://h"}, {"username": "a", "password": "b"}, id="basic auth"),
    pytest.param({"server": "https://h", "proxy-url": "http://p"}, {}, id="a proxy"),
    pytest.param({"server": "https://h"}, {"client-certificate": "c.crt"},
                 id="a certificate without its key"),
    pytest.param({"server": "h:6443"}, {}, id="a server without a scheme"),
    pytest.param({"server": "https://h", "certificate-authority-data": "not base64!"}, {},
                 id="CA data that is not base64"),
])
def test_anything_else_is_left_to_the_library(tmp_path: Path, cluster: dict[str, Any],
                                              user: dict[str, Any]) -> None:
    assert read_static(str(kubeconfig(tmp_path, cluster, user))) is None


def test_an_unknown_context_or_several_files_are_left_to_the_library(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path, {"server": "https://h"}, {"token": "t"}, current="other")
    assert read_static(str(path)) is None
    assert read_static(str(path), context="ctx") is not None
    assert read_static(f"{path}:{path}") is None
    assert read_static(str(tmp_path / "missing")) is None


async def test_a_static_kubeconfig_gives_access_without_kubernetes_asyncio(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def library(path: str, context: str | None) -> auth.ClusterAccess:
        raise AssertionError("the library was asked")

    monkeypatch.setattr(auth, "_from_library", library)
    (tmp_path / "tok").write_text("rotated\n")
    path = kubeconfig(tmp_path, {"server": "http://127.0.0.1:1"}, {"tokenFile": "tok"})
    access = await auth.from_kubeconfig(str(path))
    assert access.host == "http://127.0.0.1:1"
    assert access.ssl_context is None
    assert await access.authorization() == "Bearer rotated"


async def test_a_missing_ca_file_names_the_kubeconfig(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path, {"server": "https://h", "certificate-authority": "nope.crt"},
                      {"token": "t"})
    with pytest.raises(auth.AuthError, match=f"cannot load kubeconfig {path}"):
        await auth.from_kubeconfig(str(path))


_EXEC_TOKEN = ("import json; print(json.dumps({'apiVersion': "
               "'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential', "
               "'status': {'token': 'from-exec'}}))")


@pytest.mark.parametrize("insecure", [pytest.param(False, id="its CA verified"),
                                      pytest.param(True, id="TLS unverified when it says so")])
async def test_an_exec_plugin_kubeconfig_over_https_carries_its_ca_and_client_pair(
        tmp_path: Path, insecure: bool) -> None:
    import datetime
    import ssl
    import sys

    from jobset_infra.cluster.pki import CLIENTS, write_pki

    pki = write_pki(tmp_path / "pki", datetime.datetime.now(datetime.UTC))
    cluster: dict[str, Any] = {"server": "https://127.0.0.1:6443",
                               "certificate-authority": str(pki.ca_cert)}
    if insecure:
        cluster = {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True}
    user = {"client-certificate": str(pki.client_cert(CLIENTS[0])),
            "client-key": str(pki.client_key(CLIENTS[0])),
            "exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                     "command": sys.executable, "args": ["-c", _EXEC_TOKEN]}}
    path = kubeconfig(tmp_path, cluster, user)
    assert read_static(str(path), None) is None  # an exec plugin: the library resolves it
    access = await auth.from_kubeconfig(str(path))
    assert access.host == "https://127.0.0.1:6443"
    assert access.ssl_context is not None
    assert await access.authorization() == "Bearer from-exec"
    if insecure:
        assert access.ssl_context.verify_mode == ssl.CERT_NONE
    else:
        assert access.ssl_context.verify_mode == ssl.CERT_REQUIRED
        assert access.ssl_context.check_hostname
        [ca] = access.ssl_context.get_ca_certs()
        assert dict(x[0] for x in ca["subject"])["commonName"] == "jobset-infra-local-ca"
