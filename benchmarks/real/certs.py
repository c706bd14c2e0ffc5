"""Certificates the benchmark makes with `cryptography`: a webhook serving pair, client identities.

Upstream's manager serves its admission webhooks over TLS on loopback; the API server calls them
at a `url` and trusts them through the `caBundle` of their registration. `webhook_pki` makes a
throwaway CA and a serving certificate for 127.0.0.1 in the file names controller-runtime reads
(`tls.crt`, `tls.key`). `client_identity` signs a client certificate with the cluster's own CA,
so each controller reaches the API server as a user of its own name: the audit log then tells
whose request each one was.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=2)
MASTERS = "system:masters"


@dataclass(frozen=True)
class WebhookPki:
    folder: Path  # holds tls.crt and tls.key, as controller-runtime's webhook server wants
    ca_pem: bytes  # the caBundle of the webhook registrations


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _builder(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey
             ) -> x509.CertificateBuilder:
    now = _now()
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY))


def _name(common: str, *orgs: str) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def _write(folder: Path, stem: str, cert: x509.Certificate,
           key: ec.EllipticCurvePrivateKey) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    path = folder / f"{stem}.key"
    path.touch(mode=0o600)
    path.write_bytes(_pem(key))


def webhook_pki(folder: Path) -> WebhookPki:
    """A fresh CA and a serving certificate for 127.0.0.1/localhost, signed by it."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("jobset-bench-webhook-ca")
    ca = (_builder(ca_name, ca_name, ca_key.public_key())
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (_builder(_name("jobset-bench-webhook"), ca_name, key.public_key())
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    _write(folder, "tls", cert, key)
    return WebhookPki(folder, ca.public_bytes(serialization.Encoding.PEM))


def client_identity(ca_cert: Path, ca_key: Path, user: str, folder: Path) -> tuple[Path, Path]:
    """A client certificate for `user` (in system:masters) signed by the cluster's CA."""
    ca = x509.load_pem_x509_certificate(ca_cert.read_bytes())
    signer = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)
    if not isinstance(signer, ec.EllipticCurvePrivateKey):
        raise TypeError(f"{ca_key}: expected the cluster's EC CA key")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (_builder(_name(user, MASTERS), ca.subject, key.public_key())
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(signer, hashes.SHA256()))
    _write(folder, user, cert, key)
    return folder / f"{user}.crt", folder / f"{user}.key"
