"""Arena's own data is its owner's alone from the start, and an older instance's is put right
when it next starts (``core.private_data``)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.private_data import keep_private
from core.services.uploads import extract_upload, upload_limits
from tests.support.workers import ROOT

pytestmark = pytest.mark.slow


def modes(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder`` (itself included) with its mode, in octal."""
    found = {".": oct(stat.S_IMODE(folder.stat().st_mode))}
    for path in folder.rglob("*"):
        if not path.is_symlink():
            found[path.relative_to(folder).as_posix()] = oct(stat.S_IMODE(path.stat().st_mode))
    return found


def open_to_others(folder: Path) -> list[str]:
    return [name for name, mode in modes(folder).items() if int(mode, 8) & 0o077]


def old_instance(var: Path) -> None:
    """A ``var/`` as an instance made before the rule left it: readable by anyone."""
    upload = var / "media" / "revisions" / "connect_four" / "bob" / "v1"
    upload.mkdir(parents=True)
    (upload / "main.py").write_text("# bob's private agent\n")
    (var / "arena.sqlite3").write_bytes(b"SQLite format 3\0")
    (var / "log").mkdir()
    (var / "log" / "worker.log").write_text("a log\n")
    for path in [var, *var.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)


@pytest.fixture
def umask() -> Iterator[None]:
    """The test's own umask back afterwards (keep_private sets the process's)."""
    before = os.umask(0o022)
    os.umask(before)
    yield
    os.umask(before)


@pytest.mark.usefixtures("umask")
def test_it_makes_an_older_instances_data_owner_only_once(tmp_path, caplog):
    var = tmp_path / "var"
    old_instance(var)
    assert open_to_others(var)

    changed = keep_private([var], create=var)

    assert open_to_others(var) == []
    assert modes(var)["media/revisions/connect_four/bob/v1/main.py"] == "0o600"
    assert modes(var)["log"] == "0o700"
    assert changed == len(modes(var))
    assert "was open to other users: made owner-only" in caplog.text
    # The next start finds it right and walks nothing.
    assert keep_private([var], create=var) == 0


@pytest.mark.usefixtures("umask")
def test_it_never_follows_a_link_out_of_the_data(tmp_path):
    # A link in var/ (one planted by someone who may write there) must not make a start
    # change the file it points to.
    var = tmp_path / "var"
    old_instance(var)
    outside = tmp_path / "outside.txt"
    outside.write_text("someone else's")
    outside.chmod(0o644)
    (var / "log" / "link").symlink_to(outside)

    keep_private([var], create=var)

    assert oct(stat.S_IMODE(outside.stat().st_mode)) == "0o644"
    assert open_to_others(var) == []


@pytest.mark.usefixtures("umask")
def test_a_database_named_outside_the_data_folders_is_made_private_alone(tmp_path):
    # Its folder may hold anything of anyone's: only the database's own files change.
    (tmp_path / "arena.sqlite3").write_bytes(b"SQLite format 3\0")
    (tmp_path / "arena.sqlite3-wal").write_bytes(b"")
    (tmp_path / "someone-elses.txt").write_text("theirs")
    for path in [tmp_path, *tmp_path.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    database = tmp_path / "arena.sqlite3"

    keep_private([], files=[database, Path(f"{database}-wal"), Path(f"{database}-shm")])

    assert modes(tmp_path) == {
        ".": "0o755",
        "arena.sqlite3": "0o600",
        "arena.sqlite3-wal": "0o600",
        "someone-elses.txt": "0o644",
    }


@pytest.mark.usefixtures("umask")
def test_what_is_created_afterwards_is_owner_only(tmp_path):
    var = tmp_path / "fresh" / "var"

    keep_private([var], create=var)
    (var / "builds" / "42").mkdir(parents=True)
    (var / "builds" / "42" / "main.py").write_text("x")

    assert modes(var) == {".": "0o700", "builds": "0o700", "builds/42": "0o700",
                          "builds/42/main.py": "0o600"}  # fmt: skip


def test_an_unpacked_upload_is_private_and_keeps_its_executable_bit(tmp_path):
    import io
    import zipfile

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as packed:
        packed.writestr("main.py", "print('hi')\n")
        executable = zipfile.ZipInfo("agent")
        executable.external_attr = 0o755 << 16
        packed.writestr(executable, "#!/bin/sh\n")

    extract_upload("agent.zip", archive.getvalue(), tmp_path, upload_limits())

    assert modes(tmp_path)["main.py"] == "0o600"
    assert modes(tmp_path)["agent"] == "0o700"


def test_a_django_process_puts_an_older_instance_right_at_start(tmp_path):
    # As an upgraded embedded default would: its next start (any manage.py command) makes
    # var/ owner-only before it uses it, and the database it creates is private too.
    var = tmp_path / "var"
    old_instance(var)
    (var / "arena.sqlite3").unlink()
    environment = {
        **{key: value for key, value in os.environ.items() if not key.startswith("ARENA_")},
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "ARENA_VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{var / 'arena.sqlite3'}",
    }

    # A command that opens (so creates) the database without migrating it for a minute.
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--plan", "--verbosity", "0"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr
    assert "made owner-only" in done.stderr
    assert (var / "arena.sqlite3").exists()
    assert open_to_others(var) == []
