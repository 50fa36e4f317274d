from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from duel_runner.sandbox.base import AgentSource
from duel_runner.sandbox.process import UID_BASE, UID_COUNT, ProcessSandbox
from tests.support.require import require

AGENTS = Path(__file__).parent / "agents"
PLAYERS = Path(__file__).resolve().parents[2] / "example_players"


def sandbox_processes(uids: set[int] | None = None) -> list[tuple[int, int, str]]:
    """(pid, uid, name) of live processes under a sandbox user id (or one of ``uids``)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        uid = int(fields.get("Uid", "-1").split()[0])
        ours = uid in uids if uids is not None else UID_BASE <= uid < UID_BASE + UID_COUNT
        if ours and not fields["State"].startswith("Z"):
            found.append((int(entry.name), uid, fields["Name"].strip()))
    return found


@pytest.fixture
def sandbox_root() -> Iterator[Path]:
    # Not pytest's tmp_path: sandbox users must be able to traverse the parents.
    root = Path(tempfile.mkdtemp(prefix="arena-test-sandboxes-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


class RecordingSandbox(ProcessSandbox):
    """Remembers the user ids its agents ran under, to check none is left running."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.uids: set[int] = set()

    def start(self, source, *, limits, label):  # type: ignore[no-untyped-def]
        running = super().start(source, limits=limits, label=label)
        if running.uid is not None:
            self.uids.add(running.uid)
        return running


@pytest.fixture
def backend(sandbox_root: Path) -> Iterator[ProcessSandbox]:
    sandbox = RecordingSandbox(sandbox_root)
    yield sandbox
    # The machine is left clean: no agent folder and no agent process survive.
    leftovers = [
        path.name
        for path in sandbox_root.iterdir()
        if not path.name.startswith("sdk-") and path.name != "uids"
    ]
    assert leftovers == []
    assert sandbox_processes(sandbox.uids) == []


def hostile(behaviour: str, at: int = 1, **variables: str) -> AgentSource:
    environment = {"HOSTILE": behaviour, "HOSTILE_AT": str(at), **variables}
    return AgentSource.from_path(AGENTS / "hostile", environment)


def agent(name: str) -> AgentSource:
    return AgentSource.from_path(AGENTS / name)


def player(relative: str) -> AgentSource:
    return AgentSource.from_path(PLAYERS / relative)


@pytest.fixture
def needs_root() -> None:
    require(
        os.geteuid() == 0,
        "not root: agents get their own user ids and network namespace only when the "
        "referee runs as root, so this isolation cannot be tested",
    )
