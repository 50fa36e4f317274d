"""Backups of the docker-compose deployment (``scripts/backup.sh``) and their restore
(``scripts/restore.sh``), on a fresh clone's stack: what a backup holds, a server lost
and rebuilt empty getting its users, uploads and duels back, and a damaged archive
refused before anything changes."""

from __future__ import annotations

import hashlib
import io
import stat
import subprocess
import tarfile
from pathlib import Path

import requests

from tests.support.compose_stack import (
    ComposeStack,
    players_upload,
    round_robin_launch,
    tournament_completed,
)

PASSWORD = "a player's long password"
PARTS = ["SHA256SUMS", "manifest.txt", "database.dump", "media.tar.gz"]


def backup(stack: ComposeStack, folder: Path) -> Path:
    """``scripts/backup.sh folder``; the archive it wrote."""
    done = stack.run(["scripts/backup.sh", str(folder)], timeout=300)
    return Path(done.stdout.strip().splitlines()[-1])


def restore(stack: ComposeStack, archive: Path) -> subprocess.CompletedProcess[str]:
    return stack.run(["scripts/restore.sh", str(archive)], timeout=600, check=False)


def parts(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {name: tar.extractfile(name).read() for name in tar.getnames()}


def rewritten(path: Path, contents: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, content in contents.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return path


def sums(contents: dict[str, bytes]) -> bytes:
    return "".join(
        f"{hashlib.sha256(contents[name]).hexdigest()}  {name}\n"
        for name in ("database.dump", "media.tar.gz", "manifest.txt")
    ).encode()


def media_names(archive: Path) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(parts(archive)["media.tar.gz"])) as media:
        return sorted(media.getnames())


def source(stack: ComposeStack, name: str) -> requests.Response:
    return stack.session().get(
        f"{stack.url}/environments/sum_to_10/competitors/{name}/v1/source", timeout=30
    )


def logged_in(stack: ComposeStack, email: str, password: str) -> bool:
    session = stack.session()
    login = f"{stack.url}/accounts/login/"
    session.get(login, timeout=30).raise_for_status()
    session.post(
        login,
        data={
            "username": email,
            "password": password,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        allow_redirects=False,
        timeout=30,
    )
    return "sessionid" in session.cookies


def test_a_backup_is_one_private_archive_of_the_database_and_the_uploads(
    compose_stack: ComposeStack, tmp_path: Path
):
    players_upload(
        compose_stack, email="frank@example.org", password=PASSWORD, names=("backup-frank",)
    )

    archive = backup(compose_stack, tmp_path / "backups")

    assert archive.parent == tmp_path / "backups"
    assert archive.name.startswith("arena-backup-") and archive.suffix == ".tar"
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    contents = parts(archive)
    assert sorted(contents) == sorted(PARTS)
    assert contents["SHA256SUMS"] == sums(contents)
    assert contents["database.dump"].startswith(b"PGDMP")  # pg_dump's custom format
    manifest = contents["manifest.txt"].decode()
    assert f"project: {compose_stack.project}" in manifest
    assert f"commit: {compose_stack.commit}" in manifest
    assert "  core 00" in manifest
    assert "./revisions/sum_to_10/backup-frank/v1/main.py" in media_names(archive)
    assert [path.name for path in archive.parent.iterdir()] == [archive.name]


def test_a_restore_refuses_a_missing_or_damaged_archive_and_changes_nothing(
    compose_stack: ComposeStack, tmp_path: Path
):
    archive = backup(compose_stack, tmp_path)
    good = parts(archive)
    # Made after the backup: a refused restore must leave it.
    compose_stack.django("""
import json
from core.services.accounts import user_create

user_create(email="after@example.org", display_name="After", password="after the backup!")
print(json.dumps("made"))
""")
    started = compose_stack.state("web")["StartedAt"]
    flipped = bytearray(good["database.dump"])
    flipped[len(flipped) // 2] ^= 0xFF
    unreadable = {**good, "database.dump": b"PGDMP" + b"\0" * 4000}
    not_a_dump = rewritten(
        tmp_path / "not-a-dump.tar", {**unreadable, "SHA256SUMS": sums(unreadable)}
    )
    (tmp_path / "notes.tar").write_text("not an archive\n")
    (tmp_path / "truncated.tar").write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    damaged = {
        tmp_path / "missing.tar": "missing.tar: no such archive",
        tmp_path / "notes.tar": "is not a backup archive: tar cannot read it",
        tmp_path / "truncated.tar": "is not a backup archive: tar cannot read it",
        rewritten(
            tmp_path / "incomplete.tar", {k: v for k, v in good.items() if k != "media.tar.gz"}
        ): "media.tar.gz is missing",
        rewritten(
            tmp_path / "flipped.tar", {**good, "database.dump": bytes(flipped)}
        ): "is corrupt: database.dump: FAILED",
        not_a_dump: "is corrupt: pg_restore cannot read its database.dump",
    }

    for path, reason in damaged.items():
        done = restore(compose_stack, path)

        assert done.returncode == 1, (path.name, done.stderr)
        assert reason in done.stderr, (path.name, done.stderr)
        assert done.stderr.rstrip().endswith("nothing was changed"), done.stderr
    assert compose_stack.state("web")["StartedAt"] == started
    assert logged_in(compose_stack, "after@example.org", "after the backup!")


def test_a_backup_restored_on_a_server_rebuilt_empty_brings_back_users_uploads_and_duels(
    compose_stack: ComposeStack, tmp_path: Path
):
    names = ("backup-dana", "backup-eve")
    players_upload(compose_stack, email="dana@example.org", password=PASSWORD, names=names)
    tournament_id = round_robin_launch(compose_stack, names=names, matches=4)
    tournament = tournament_completed(compose_stack, tournament_id, timeout=120)
    [listed] = compose_stack.get(f"/duels?tournament={tournament_id}")["items"]
    duel = compose_stack.get(f"/duels/{listed['id']}")
    upload = source(compose_stack, "backup-dana").content
    assert upload.startswith(b"\nimport time")
    archive = backup(compose_stack, tmp_path / "backups")

    # The server is lost: the same deployment, rebuilt with nothing in it (and restored
    # as soon as the site answers, before the workers' first healthcheck).
    compose_stack.compose("down", "-v", timeout=300)
    compose_stack.up(wait=False)
    compose_stack.wait_answering()
    assert source(compose_stack, "backup-dana").status_code == 404
    assert not logged_in(compose_stack, "dana@example.org", PASSWORD)
    # Nothing uploaded yet: the media part of its backup is empty, and still made.
    assert media_names(backup(compose_stack, tmp_path / "empty")) == ["."]

    done = restore(compose_stack, archive)

    assert done.returncode == 0, done.stderr
    compose_stack.wait_answering()
    assert source(compose_stack, "backup-dana").content == upload
    assert logged_in(compose_stack, "dana@example.org", PASSWORD)
    assert compose_stack.get(f"/tournaments/{tournament_id}") == tournament
    assert compose_stack.get(f"/duels/{duel['id']}") == duel
    assert compose_stack.get(f"/duels/{duel['id']}/matches?limit=1")["count"] == 4
    # The restored deployment plays on: new rows get new ids, the revisions' images are
    # found.
    again = round_robin_launch(compose_stack, names=names, matches=2)
    assert again > tournament_id
    assert tournament_completed(compose_stack, again, timeout=120)["duels_done"] == 1
