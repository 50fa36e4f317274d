"""Settings from the environment, or from files for secrets (``<NAME>_FILE``); settings
that depend on each other, read from the environment as a fresh process reads them
(``core/settings.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

from core.settings import env_str

READ = (
    "import json; from core import settings as s; print(json.dumps({"
    "'behind_proxy': s.ARENA_BEHIND_PROXY, "
    "'scheme_header': getattr(s, 'SECURE_PROXY_SSL_HEADER', None)}))"
)


def _settings(**environment: str) -> dict[str, object]:
    found = subprocess.run(
        [sys.executable, "-c", READ],
        env={**os.environ, **environment},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(found.stdout)


def test_a_setting_is_read_from_its_file_without_the_final_newline(tmp_path, monkeypatch):
    secret = tmp_path / "database_url"
    secret.write_text("postgres://arena:s3cret@postgres:5432/arena\n")
    monkeypatch.setenv("DATABASE_URL", "sqlite:///ignored")
    monkeypatch.setenv("DATABASE_URL_FILE", str(secret))
    assert env_str("DATABASE_URL", "") == "postgres://arena:s3cret@postgres:5432/arena"


def test_without_a_file_the_variable_or_the_default_holds(monkeypatch):
    monkeypatch.delenv("ARENA_FROM_EMAIL_FILE", raising=False)
    monkeypatch.setenv("ARENA_FROM_EMAIL", "arena@example.org")
    assert env_str("ARENA_FROM_EMAIL", "x") == "arena@example.org"
    monkeypatch.delenv("ARENA_FROM_EMAIL")
    assert env_str("ARENA_FROM_EMAIL", "x") == "x"


def test_an_unreadable_file_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_SECRET_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=r"ARENA_SECRET_KEY_FILE: cannot read .*missing"):
        env_str("ARENA_SECRET_KEY", "")


def test_behind_the_proxy_the_client_address_and_scheme_come_from_its_headers():
    assert _settings(ARENA_BEHIND_PROXY="1") == {
        "behind_proxy": True,  # the API's rates: the last X-Forwarded-For address, nginx's
        "scheme_header": ["HTTP_X_FORWARDED_PROTO", "https"],
    }


def test_by_default_the_forwarding_headers_are_ignored():
    assert _settings(ARENA_BEHIND_PROXY="0") == {"behind_proxy": False, "scheme_header": None}


def test_a_connection_cap_under_one_is_a_clear_error():
    started = subprocess.run(
        [sys.executable, "-c", "import core.settings"],
        env={**os.environ, "ARENA_CONNECTIONS_PER_ADDRESS": "0"},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert started.returncode != 0
    assert "ARENA_CONNECTIONS_PER_ADDRESS must be 1 or more" in started.stderr
