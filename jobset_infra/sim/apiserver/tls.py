"""A throwaway self-signed certificate for the simulated server's optional HTTPS.

The `cryptography` package is not a dependency of this project, so the certificate is made by
the `openssl` command line tool; without it, TLS is unavailable and `self_signed` says so.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path


class TlsUnavailableError(RuntimeError):
    """No `openssl` binary to make a certificate with."""


def self_signed(host: str) -> tuple[Path, Path]:
    """(certificate, key) files valid for `host`, localhost and 127.0.0.1, for one day."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsUnavailableError("tls=True needs the openssl command; install it or use tls=False")
    folder = Path(tempfile.mkdtemp(prefix="jobset-sim-tls-"))
    cert, key = folder / "tls.crt", folder / "tls.key"
    kind = "IP" if host[0].isdigit() else "DNS"
    names = f"subjectAltName=DNS:localhost,IP:127.0.0.1,{kind}:{host}"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=jobset-infra-sim", "-addext", names,
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    return cert, key
