"""The public pages benchmark's smoke run: this checkout and its own HEAD (a temporary
worktree) serve one throwaway PostgreSQL database in turn, through gunicorn."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.postgres import find_bindir
from tests.support.require import require

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_both_checkouts_serve_every_kind_of_page_to_the_readers(tmp_path):
    require(shutil.which("redis-server"), "redis-server is not installed, so it cannot run")
    require(find_bindir(), "PostgreSQL is not installed, so the pages benchmark cannot run")
    figures_path = tmp_path / "figures.json"
    before = worktrees()

    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_pages", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert completed.returncode == 0, completed.stderr[-3000:]
    figures = json.loads(figures_path.read_text())
    for role in ("baseline", "candidate"):
        run = figures["runs"][role]
        assert run["missing"] == [], (role, completed.stderr[-3000:])
        assert run["pages"]["all"]["requests"] > 0
        assert run["pages"]["all"]["errors"] == 0, (role, run["pages"])
    assert worktrees() == before  # its temporary worktree is gone


def worktrees() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True, check=True
    ).stdout
