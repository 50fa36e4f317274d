"""The embedded default's SQLite database (``database_from_url`` in ``core/settings.py``)
with several processes writing at once, as the server, its worker's pool and the
tournament manager do: nobody is ever told "database is locked"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.embedded import EmbeddedSite
from tests.support.workers import ROOT

pytestmark = pytest.mark.slow

WRITES = 40
WRITERS = 3

PRAGMAS = """
import json
from django.db import connection

with connection.cursor() as cursor:
    cursor.execute("PRAGMA journal_mode")
    journal = cursor.fetchone()[0]
    cursor.execute("PRAGMA busy_timeout")
    busy = cursor.fetchone()[0]
print(json.dumps([journal, busy]))
"""
SHARED_CODE = """
from core.models import InviteCode

InviteCode.objects.create(code="shared", max_uses=1_000_000)
print("null")
"""
#: A sign-up's transaction (the code's row locked and counted, a row added) and a
#: heartbeat's single update, over and over.
WRITER = f"""
import sys
from django.db import transaction
from django.db.models import F
from core.models import InviteCode

name = sys.argv[-1]
for number in range({WRITES}):
    with transaction.atomic():
        code = InviteCode.objects.select_for_update().get(code="shared")
        InviteCode.objects.filter(pk=code.pk).update(used_count=F("used_count") + 1)
        InviteCode.objects.create(code=f"{{name}}-{{number}}", created_by=None)
    InviteCode.objects.filter(code="shared").update(note=f"{{name}} {{number}}")
"""
#: Pages being read meanwhile, until the writers are done.
READER = """
import pathlib, sys
from core.models import InviteCode

done = pathlib.Path(sys.argv[-1])
while not done.exists():
    rows = list(InviteCode.objects.order_by("code"))
    assert InviteCode.objects.filter(code="shared").exists()
"""


def python(site: EmbeddedSite, code: str, argument: str) -> subprocess.Popen[str]:
    setup = "import django; django.setup()\n"
    return subprocess.Popen(
        [sys.executable, "-c", setup + code, argument],
        cwd=ROOT,
        env=site.environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_it_opens_sqlite_with_write_ahead_logging_and_a_busy_timeout(tmp_path: Path):
    site = EmbeddedSite(tmp_path)
    try:
        assert site.run(PRAGMAS) == ["wal", 30_000]
    finally:
        site.close()


def test_several_processes_writing_at_once_never_find_the_database_locked(
    tmp_path: Path, embedded_database: Path
):
    site = EmbeddedSite(tmp_path, database=embedded_database)
    done = tmp_path / "writers-done"
    try:
        site.run(SHARED_CODE)
        readers = [python(site, READER, str(done)) for _ in range(2)]
        writers = [python(site, WRITER, f"writer{number}") for number in range(WRITERS)]

        written = [writer.communicate(timeout=300) for writer in writers]
        done.touch()
        read = [reader.communicate(timeout=60) for reader in readers]

        outcomes = written + read
        assert [process.returncode for process in writers + readers] == [0] * (WRITERS + 2), (
            outcomes
        )
        assert not any("locked" in err for _, err in outcomes), outcomes
        assert site.run(
            "import json\nfrom core.models import InviteCode\n"
            "print(json.dumps([InviteCode.objects.get(code='shared').used_count, "
            "InviteCode.objects.count()]))"
        ) == [WRITERS * WRITES, WRITERS * WRITES + 1]
    finally:
        site.close()
