"""Secrets Arena keeps for its users: the API keys of LLM players.

A key is stored encrypted with Fernet (AES-128-CBC with an HMAC-SHA256, from
``cryptography``) under ``ARENA_SECRETS_KEY``. When that setting is empty the Fernet key is
derived from ``SECRET_KEY`` (HKDF-SHA256, salt ``arena-secrets``, 32 bytes): convenient for
the embedded default, but rotating ``SECRET_KEY`` then makes every stored key unreadable,
so production sets ``ARENA_SECRETS_KEY`` (``python -c "from cryptography.fernet import
Fernet; print(Fernet.generate_key().decode())"``).

A key may instead be a reference to a secret of the worker that plays the seat:
``env:NAME`` (an environment variable) or ``file:/path`` (a file's content, stripped),
resolved at play time, so it is never in the database at all.

Decrypted keys go only into ``llm.config.LLMConfig`` (whose ``repr`` hides them): never
into a log, a page, an API response or a replay.
"""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from core.errors import ArenaError

#: ``env:NAME`` or ``file:/absolute/path``.
SECRET_REF_PATTERN = re.compile(r"^(env:[A-Za-z_][A-Za-z0-9_]*|file:/\S+)$")
SECRET_REF_HELP = (
    "env:NAME (an environment variable of the duel workers) or file:/path (a file on them)"
)


def _fernet() -> Fernet:
    configured = settings.ARENA_SECRETS_KEY
    if configured:
        try:
            return Fernet(configured.encode())
        except ValueError:
            raise ArenaError(
                "ARENA_SECRETS_KEY is not a Fernet key (32 url-safe base64-encoded bytes); "
                "generate one with Fernet.generate_key()"
            ) from None
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"arena-secrets", info=b"").derive(
        settings.SECRET_KEY.encode()
    )
    return Fernet(base64.urlsafe_b64encode(derived))


def secret_encrypt(plaintext: str) -> str:
    """The text to store for ``plaintext``; "" stays "" (no key)."""
    if not plaintext:
        return ""
    return _fernet().encrypt(plaintext.encode()).decode()


def secret_decrypt(token: str, *, what: str) -> str:
    """The plaintext of a stored secret; a clear error when it cannot be read (the secrets
    key changed since it was stored)."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise ArenaError(
            f"the stored API key of {what} cannot be decrypted (ARENA_SECRETS_KEY or "
            "SECRET_KEY changed since it was stored): re-enter the key"
        ) from None


def secret_resolve(reference: str, *, what: str) -> str:
    """The value behind ``env:NAME`` or ``file:/path``, read where the seat is played."""
    scheme, _, name = reference.partition(":")
    if scheme == "env":
        value = os.environ.get(name, "")
        if not value:
            raise ArenaError(
                f"the API key of {what} is the environment variable {name}, which is not set "
                "on this worker: set it there, or store the key itself"
            )
        return value
    if scheme == "file":
        try:
            value = Path(name).read_text().strip()
        except OSError as error:
            raise ArenaError(
                f"the API key of {what} is the file {name}, which cannot be read on this "
                f"worker ({error.strerror or error}): put it there, or store the key itself"
            ) from None
        if not value:
            raise ArenaError(f"the API key file {name} of {what} is empty")
        return value
    raise ArenaError(f"the API key reference of {what} is not {SECRET_REF_HELP}")
