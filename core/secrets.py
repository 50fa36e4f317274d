"""Secrets Arena keeps for its users: the API keys of LLM players.

A key is stored encrypted with Fernet (AES-128-CBC with an HMAC-SHA256, from
``cryptography``) under ``ARENA_SECRETS_KEY``. When that setting is empty the Fernet key is
derived from ``SECRET_KEY`` (HKDF-SHA256, salt ``arena-secrets``, 32 bytes): convenient for
the embedded default, but rotating ``SECRET_KEY`` then makes every stored key unreadable,
so production sets ``ARENA_SECRETS_KEY`` (``python -c "from cryptography.fernet import
Fernet; print(Fernet.generate_key().decode())"``).

A key may instead be a reference to a secret of the worker that plays the seat:
``env:ARENA_LLM_KEY_<NAME>`` (an environment variable) or ``file:<name>`` (a file of
``ARENA_LLM_SECRETS_DIR``, stripped), resolved at play time, so it is never in the database
at all. Only organizers may set one (``reference_refusal``): a reference sends a secret of
Arena's workers to the player's server, so whoever may point a player at a server of their
own must not choose which secret goes there; and the names are confined to those two
places, so that no reference can ever name ``DATABASE_URL`` or ``/etc/shadow``.

What a player may make the workers reach is checked too (``url_refusal``): a base URL on
this machine or a private network (loopback, RFC 1918, link-local such as a cloud's
metadata service, unique-local) is for the users ``ARENA_LLM_PRIVATE_URLS`` allows.

Decrypted keys go only into ``llm.config.LLMConfig`` (whose ``repr`` hides them): never
into a log, a page, an API response or a replay.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import re
import socket
import urllib.parse
from pathlib import Path
from typing import Protocol

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from core.errors import ArenaError


class Requester(Protocol):
    """Whoever asks for a player's settings (a user): here only whether they organize."""

    @property
    def is_organizer(self) -> bool: ...


#: ``env:ARENA_LLM_KEY_<NAME>`` or ``file:<name>`` (in ``ARENA_LLM_SECRETS_DIR``).
SECRET_REF_PATTERN = re.compile(
    r"^(env:ARENA_LLM_KEY_[A-Za-z0-9_]+|file:[A-Za-z0-9][A-Za-z0-9._-]*)$"
)
SECRET_REF_HELP = (
    "env:ARENA_LLM_KEY_<NAME> (an environment variable of the duel workers) or file:<name> "
    "(a file in their ARENA_LLM_SECRETS_DIR); organizers only"
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
    if not SECRET_REF_PATTERN.match(reference):
        raise ArenaError(f"the API key reference of {what} is not {SECRET_REF_HELP}")
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
        name = str(Path(settings.ARENA_LLM_SECRETS_DIR) / name)
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


def reference_refusal(reference: str, *, by: Requester) -> str | None:
    """Why ``by`` may not set the secret reference ``reference``; None if they may."""
    if reference and not by.is_organizer:
        return (
            "only organizers may give a secret reference: it sends a secret of Arena's "
            "workers to the player's server; give the API key itself instead"
        )
    return None


def _private(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_reserved
        or address.is_multicast
        or address.is_unspecified
    )


def url_refusal(url: str, *, by: Requester) -> str | None:
    """Why ``by`` may not make the duel workers send requests to ``url``; None if they may.

    Every address the host name resolves to is checked, here and again each time the
    player plays (a name may be made to point elsewhere later)."""
    policy = settings.ARENA_LLM_PRIVATE_URLS
    if policy == "everyone" or (policy == "organizers" and by.is_organizer):
        return None
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        addresses = {
            ipaddress.ip_address(str(info[4][0]).split("%")[0])
            for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        }
    except (OSError, UnicodeError, ValueError):
        return f"the host {host!r} of {url} cannot be resolved from Arena's servers"
    private = sorted(str(address) for address in addresses if _private(address))
    if not private:
        return None
    who = "organizers" if policy == "organizers" else "nobody"
    return (
        f"{url} points at a private or local address ({', '.join(private)}): on this Arena "
        f"only {who} may point an LLM player there (ARENA_LLM_PRIVATE_URLS)"
    )
