"""The local cluster's certificates: one CA, a serving pair for loopback, a client per identity."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from jobset_infra.cluster import pki


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_every_certificate_is_signed_by_the_ca(tmp_path: Path) -> None:
    made = pki.write_pki(tmp_path, datetime.datetime.now(datetime.UTC))
    ca = load(made.ca_cert)
    for cert in [made.serving_cert, *(made.client_cert(who) for who in pki.CLIENTS)]:
        load(cert).verify_directly_issued_by(ca)


def test_the_serving_certificate_names_loopback_and_the_in_cluster_service(tmp_path: Path) -> None:
    made = pki.write_pki(tmp_path, datetime.datetime.now(datetime.UTC))
    names = load(made.serving_cert).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert "kubernetes.default.svc" in names.get_values_for_type(x509.DNSName)


def test_a_client_certificate_carries_its_user_and_groups(tmp_path: Path) -> None:
    made = pki.write_pki(tmp_path, datetime.datetime.now(datetime.UTC))
    cert = load(made.client_cert(pki.ADMIN))
    subject = cert.subject
    assert subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "jobset-infra-admin"
    assert [a.value for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        "system:masters"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_private_keys_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    made = pki.write_pki(tmp_path, datetime.datetime.now(datetime.UTC))
    for key in (made.ca_key, made.serving_key, made.service_account_key,
                made.client_key(pki.KWOK)):
        assert key.stat().st_mode & 0o077 == 0, key
