"""`jobset-infra kueue-postrender --port P --ca-bundle B`: Helm post-renderer for a loopback Kueue.

The Kueue component passes this command to helm.v4.Chart when Kueue's webhooks are served on
the API server's loopback (`kueue.install.loopback_webhooks`, the local cluster): Helm writes the
rendered chart to stdin and installs what this prints. The change itself is
`jobset_infra.manifests.kueue_loopback.loopback_documents` (webhooks to 127.0.0.1:P trusting B,
visibility APIServices left out).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import sys

import yaml

# libyaml's loader and dumper when PyYAML has them: the rendered chart is about 2 MB (Kueue's
# CRDs), which the pure-Python ones take seconds of CPU over on every preview and update.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, required=True, help="the webhook server's port")
    parser.add_argument("--ca-bundle", required=True, metavar="BASE64",
                        help="base64 of the PEM CA that signed the webhook server's certificate")


def run(args: argparse.Namespace) -> int:
    from jobset_infra.manifests.kueue_loopback import loopback_documents

    if not 0 < args.port < 65536:
        print(f"kueue-postrender: --port {args.port} is not a TCP port", file=sys.stderr)
        return 2
    try:
        ca_pem = base64.b64decode(args.ca_bundle, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        print("kueue-postrender: --ca-bundle is not base64 of a PEM certificate", file=sys.stderr)
        return 2
    try:
        documents = list(yaml.load_all(sys.stdin, Loader=_Loader))
    except yaml.YAMLError as err:
        print(f"kueue-postrender: the rendered chart is not YAML: {err}", file=sys.stderr)
        return 1
    yaml.dump_all(loopback_documents(documents, args.port, ca_pem), sys.stdout, Dumper=_Dumper,
                  sort_keys=False)
    return 0
