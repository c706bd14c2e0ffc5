"""Kueue's chart post-rendered for a manager on the API server's loopback (the local cluster)."""

from __future__ import annotations

import base64
import io
import sys
from typing import Any

import pytest
import yaml

from jobset_infra.cli import main
from jobset_infra.manifests.kueue_install import manager_configuration
from jobset_infra.manifests.kueue_loopback import loopback_documents
from jobset_infra.manifests.kueue_spec import (
    KueueInstall,
    KueueSpecError,
    LoopbackWebhooks,
    parse_kueue_install,
)

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
SERVICE = {"name": "kueue-webhook-service", "namespace": "kueue-system"}


def _webhooks(kind: str) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": f"kueue-{kind.lower()}"},
            "webhooks": [{"name": "mjobset.kb.io", "failurePolicy": "Fail",
                          "clientConfig": {"service": {**SERVICE, "path": "/mutate-jobset"}}}]}


CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "workloads.kueue.x-k8s.io"},
       "spec": {"group": "kueue.x-k8s.io", "conversion": {"strategy": "Webhook", "webhook": {
           "clientConfig": {"service": {**SERVICE, "path": "/convert"}},
           "conversionReviewVersions": ["v1"]}}}}
APISERVICE = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
              "metadata": {"name": "v1beta2.visibility.kueue.x-k8s.io"}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kueue"}}


def test_admission_webhooks_call_loopback_and_trust_the_given_ca() -> None:
    out = list(loopback_documents([_webhooks("MutatingWebhookConfiguration")], 19443, CA))
    [hook] = out[0]["webhooks"]
    assert hook["clientConfig"] == {"url": "https://127.0.0.1:19443/mutate-jobset",
                                    "caBundle": base64.b64encode(CA.encode()).decode()}
    assert hook["failurePolicy"] == "Fail"


def test_crd_conversion_calls_loopback_too() -> None:
    [crd] = loopback_documents([CRD], 19443, CA)
    webhook = crd["spec"]["conversion"]["webhook"]
    assert webhook["clientConfig"]["url"] == "https://127.0.0.1:19443/convert"
    assert webhook["conversionReviewVersions"] == ["v1"]


def test_apiservices_are_left_out_and_the_rest_passes_unchanged() -> None:
    docs = [APISERVICE, DEPLOYMENT, None, _webhooks("ValidatingWebhookConfiguration")]
    kinds = [d["kind"] for d in loopback_documents(docs, 19443, CA)]
    assert kinds == ["Deployment", "ValidatingWebhookConfiguration"]


def test_the_manager_serves_on_that_port_without_its_own_certificate_rotation() -> None:
    install = KueueInstall(chart_path="/c", loopback_webhooks=LoopbackWebhooks(
        port=19443, ca_file="/pki/ca.crt"))
    config = manager_configuration(install)
    assert config["webhook"] == {"host": "127.0.0.1", "port": 19443}
    assert config["internalCertManagement"] == {"enable": False}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"loopback_webhooks": {"port": 19443, "ca_file": "/ca"}}, "set chart_path too",
                     id="loopback webhooks need a local chart to post-render"),
        pytest.param({"chart_path": "/c", "loopback_webhooks": {"port": 80, "ca_file": "/ca"}},
                     "port", id="a privileged port"),
        pytest.param({"chart_path": "/c", "loopback_webhooks": {"port": 19443, "ca_file": ""}},
                     "ca_file", id="no CA file"),
    ],
)
def test_bad_loopback_settings_name_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(KueueSpecError, match=message):
        parse_kueue_install(**fields)


def test_the_post_render_command_rewrites_stdin_to_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rendered = yaml.safe_dump_all([APISERVICE, _webhooks("MutatingWebhookConfiguration")])
    monkeypatch.setattr(sys, "stdin", io.StringIO(rendered))
    bundle = base64.b64encode(CA.encode()).decode()
    assert main(["kueue-postrender", "--port=19443", f"--ca-bundle={bundle}"]) == 0
    [doc] = yaml.safe_load_all(capsys.readouterr().out)
    assert doc["webhooks"][0]["clientConfig"]["caBundle"] == bundle


def test_the_post_render_command_refuses_a_bundle_that_is_not_base64(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["kueue-postrender", "--port=19443", "--ca-bundle=%%%"]) == 2
    assert "--ca-bundle is not base64" in capsys.readouterr().err
