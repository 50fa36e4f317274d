"""A self-signed certificate for 127.0.0.1, for the tests of TLS (nginx in front of the
site, the LLM harness's client). Django-free."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.require import require


def write_self_signed_certificate(*, certificate: Path, key: Path) -> None:
    """A new key and a certificate for 127.0.0.1, valid for a day, written to these files
    (replacing them: a renewal)."""
    require(
        shutil.which("openssl"),
        "openssl is not installed (apt-get install openssl), so HTTPS cannot be checked",
    )
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(certificate),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
