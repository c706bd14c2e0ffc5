"""Kueue's rendered chart, adapted to a Kueue manager that serves on the API server's loopback.

On the local cluster (`jobset-infra cluster up`) Kueue's manager is a process on this machine,
not a Pod the API server can reach through a Service: there is no kube-proxy and no Pod network.
Helm renders the chart; this post-render step (`jobset-infra kueue-postrender`, run by the
Kubernetes provider's helm.v4.Chart) then

- points every admission webhook and every CRD conversion webhook at
  `https://127.0.0.1:<port><path>`, trusting the given CA (the cluster's CA signs the serving
  certificate the pod runner gives the manager); paths are the chart's own;
- leaves out the visibility APIServices: the local API server has no aggregation layer (no
  front-proxy certificates), so they could never be Available, and an unavailable APIService
  makes every discovery partial and keeps namespaces from finishing deletion.

Everything else passes unchanged. Pure: documents in, documents out.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import Any, Final

from jobset_infra.manifests.meta import Manifest

__all__ = ["LOOPBACK_HOST", "loopback_documents", "webhook_url"]

LOOPBACK_HOST: Final = "127.0.0.1"
_WEBHOOK_KINDS: Final = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def webhook_url(port: int, path: str) -> str:
    return f"https://{LOOPBACK_HOST}:{port}{path or '/'}"


def loopback_documents(
    documents: Iterable[Manifest | None], port: int, ca_pem: str
) -> Iterator[Manifest]:
    """The chart's objects with webhooks on loopback and without APIServices (see module doc)."""
    ca_bundle = base64.b64encode(ca_pem.encode()).decode()
    for doc in documents:
        if not doc:
            continue
        kind = doc.get("kind")
        if kind == "APIService":
            continue
        if kind in _WEBHOOK_KINDS:
            yield _with_webhooks(doc, port, ca_bundle)
        elif kind == "CustomResourceDefinition" and _converts_by_webhook(doc):
            yield _with_conversion(doc, port, ca_bundle)
        else:
            yield doc


def _client_config(config: Manifest, port: int, ca_bundle: str) -> dict[str, Any]:
    path = (config.get("service") or {}).get("path") or ""
    return {"url": webhook_url(port, path), "caBundle": ca_bundle}


def _with_webhooks(doc: Manifest, port: int, ca_bundle: str) -> Manifest:
    webhooks = [
        {**hook, "clientConfig": _client_config(hook.get("clientConfig") or {}, port, ca_bundle)}
        for hook in doc.get("webhooks") or []
    ]
    return {**doc, "webhooks": webhooks}


def _converts_by_webhook(doc: Manifest) -> bool:
    return ((doc.get("spec") or {}).get("conversion") or {}).get("strategy") == "Webhook"


def _with_conversion(doc: Manifest, port: int, ca_bundle: str) -> Manifest:
    spec = doc["spec"]
    conversion = spec["conversion"]
    webhook = conversion.get("webhook") or {}
    config = _client_config(webhook.get("clientConfig") or {}, port, ca_bundle)
    return {
        **doc,
        "spec": {**spec, "conversion": {**conversion, "webhook": {**webhook,
                                                                  "clientConfig": config}}},
    }
