"""The metrics server's TLS: a certificate from a directory (cert-manager, a Secret), or a
self-signed one made at start, as controller-runtime's metrics server does without a CertDir.

Scrapers verify the certificate when one is provided (`tls.crt`/`tls.key` in the directory);
a self-signed certificate (ECDSA P-256, one year, the pod IP and hostname as names) still
encrypts the scrape and hides the bearer token, and is what Prometheus' `insecureSkipVerify`
scrape configs of controller-runtime projects expect. It is made by a short-lived child process
(this module run as a program): the cryptography library then never enters the controller's own
memory, where it stayed mapped for the process's life (7 MiB of the idle controller's RSS,
measured 2026-12-02) for one signature at start.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["serving_context"]

_VALIDITY = datetime.timedelta(days=365)


def serving_context(cert_dir: str, host: str) -> ssl.SSLContext:
    """A TLS 1.2+ server context from `cert_dir`'s tls.crt/tls.key, or self-signed for `host`."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_dir:
        folder = Path(cert_dir)
        context.load_cert_chain(folder / "tls.crt", folder / "tls.key")
        return context
    cert, key = _self_signed_by_child(host)
    with tempfile.TemporaryDirectory(prefix="jobset-metrics-tls-") as scratch:
        cert_file, key_file = Path(scratch) / "tls.crt", Path(scratch) / "tls.key"
        cert_file.write_bytes(cert)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
        context.load_cert_chain(cert_file, key_file)  # read now; the files go with the folder
    return context


_KEY_BEGINS = b"-----BEGIN PRIVATE KEY-----"


def _self_signed_by_child(host: str) -> tuple[bytes, bytes]:
    """(certificate, key) as PEM, made by `python -m` this module."""
    done = subprocess.run([sys.executable, "-m", __name__, host], capture_output=True,
                          timeout=120, check=False)
    cert, found, key = done.stdout.partition(_KEY_BEGINS)
    if done.returncode != 0 or not found:
        words = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        raise RuntimeError(f"cannot make the metrics server's self-signed certificate "
                           f"({words[0] if words else f'exit {done.returncode}'}); "
                           "give metrics.certDir a tls.crt and tls.key")
    return cert, found + key


def _names(host: str) -> list[Any]:
    from cryptography import x509

    names: list[Any] = [x509.DNSName("localhost"), x509.DNSName(socket.gethostname())]
    for candidate in {host or "127.0.0.1", "127.0.0.1"}:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(candidate)))
        except ValueError:
            names.append(x509.DNSName(candidate))
    return names


def _self_signed(host: str) -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jobset-controller-metrics")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(_names(host)), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


if __name__ == "__main__":
    _cert, _key = _self_signed(sys.argv[1] if len(sys.argv) > 1 else "")
    sys.stdout.buffer.write(_cert + _key)
