"""Settings from the environment, or from files for secrets (``<NAME>_FILE``)."""

from __future__ import annotations

import pytest

from core.settings import env_str


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
