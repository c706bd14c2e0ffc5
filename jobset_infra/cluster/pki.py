"""The local cluster's certificates and keys, made with `cryptography` (no openssl binary).

One CA signs everything: the API server's serving certificate (loopback and the in-cluster
`kubernetes.default.svc` names), a client certificate per identity (admin, controller-manager,
scheduler, kwok), and the key that signs ServiceAccount tokens. Short-lived and local: a fresh
set per `cluster up`, removed by `cluster down`.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# The names a client may use for the API server: loopback, and the in-cluster Service.
SERVING_DNS = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
               "kubernetes.default.svc.cluster.local")
VALIDITY = datetime.timedelta(days=30)


@dataclass(frozen=True)
class Identity:
    """A client certificate's subject: the user name (CN) and groups (O) the API server sees."""

    file_stem: str
    user: str
    groups: tuple[str, ...] = ()


ADMIN = Identity("admin", "jobset-infra-admin", ("system:masters",))
CONTROLLER_MANAGER = Identity("kube-controller-manager", "system:kube-controller-manager")
SCHEDULER = Identity("kube-scheduler", "system:kube-scheduler")
# kwok plays the kubelet of every fake Node at once; the Node authorizer scopes a kubelet to its
# own node, which one process for hundreds of nodes cannot be, so kwok is an admin here.
KWOK = Identity("kwok", "kwok", ("system:masters",))
CLIENTS: tuple[Identity, ...] = (ADMIN, CONTROLLER_MANAGER, SCHEDULER, KWOK)
# With real nodes: what the API server presents to a kubelet (for logs, exec, port-forward).
APISERVER_KUBELET_CLIENT = Identity("apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                                    ("system:masters",))
# With real nodes: what the API server's aggregation layer presents to an aggregated API server
# in a Pod (Kueue's visibility API), which trusts the user it names in X-Remote-User only from
# this name (`--requestheader-allowed-names`).
FRONT_PROXY_CLIENT = Identity("front-proxy-client", "front-proxy-client")


@dataclass(frozen=True)
class Pki:
    """Paths of everything `write_pki` made in one folder."""

    folder: Path

    @property
    def ca_cert(self) -> Path:
        return self.folder / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.folder / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.folder / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.folder / "apiserver.key"

    @property
    def service_account_key(self) -> Path:
        return self.folder / "sa.key"

    @property
    def service_account_pub(self) -> Path:
        return self.folder / "sa.pub"

    def client_cert(self, who: Identity) -> Path:
        return self.folder / f"{who.file_stem}.crt"

    def client_key(self, who: Identity) -> Path:
        return self.folder / f"{who.file_stem}.key"


def write_pki(folder: Path, now: datetime.datetime, clients: Sequence[Identity] = CLIENTS,
              serving_ips: Sequence[str] = ()) -> Pki:
    """Make the CA, the serving pair, one client pair per identity and the SA key in `folder`.
    `serving_ips` are more addresses the API server answers on (real nodes' pods reach it at
    their gateway and at the `kubernetes` Service's address)."""
    folder.mkdir(parents=True, exist_ok=True)
    pki = Pki(folder)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jobset-infra-local-ca")])
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    _write_pair(pki.ca_cert, pki.ca_key, ca, ca_key)
    _write_pair(pki.serving_cert, pki.serving_key, *_serving(ca, ca_key, now, serving_ips))
    for who in clients:
        _write_pair(pki.client_cert(who), pki.client_key(who), *_client(who, ca, ca_key, now))
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki.service_account_key, sa_key)
    pki.service_account_pub.write_bytes(sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return pki


def _serving(
    ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, now: datetime.datetime,
    extra_ips: Sequence[str] = (),
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in SERVING_DNS]
    ips = dict.fromkeys(("127.0.0.1", "10.0.0.1", *extra_ips))
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    cert = (
        _builder(subject, ca.subject, key.public_key(), now)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(_usage(), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def _client(
    who: Identity, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey,
    now: datetime.datetime,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in who.groups]
    subject = x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, who.user)])
    cert = (
        _builder(subject, ca.subject, key.public_key(), now)
        .add_extension(_usage(), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def _usage(cert_sign: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=not cert_sign,
        data_encipherment=False, key_agreement=False, key_cert_sign=cert_sign,
        crl_sign=cert_sign, encipher_only=False, decipher_only=False,
    )


def _write_pair(cert_path: Path, key_path: Path, cert: x509.Certificate,
                key: ec.EllipticCurvePrivateKey) -> None:
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key_path, key)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.touch(mode=0o600)
    path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()))
