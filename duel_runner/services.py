"""Playing duels stored in the database (a revision's validation by self-play, which
stores its duel too, is ``duel_runner.validation``)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import TYPE_CHECKING, Any

import orjson
from django.conf import settings
from django.db import connection

from core.errors import ArenaError
from core.jobs.policies import Outcome
from core.jobs.signals import duel_finished
from core.jobs.worker import Claimed, Done, job_run
from core.models import (
    Competitor,
    Duel,
    DuelSeat,
    DuelStatus,
    Environment,
    JobKind,
    LiveEvent,
    Match,
    MatchConversation,
    MatchLog,
    Revision,
)
from core.models import DuelResult as StoredResult
from core.models.llm import SUMMARY_COUNTERS
from core.private_data import data_folders
from core.services.confinement import AgentsUnconfined, unconfined_refusal
from core.services.online import seat_bus
from environments.registry import load_info
from referee.duel import run_duel
from referee.duel_settings import llm_clock
from referee.live import LiveFeed
from referee.results import DuelResult, MatchRecord
from sandboxes import AgentSource, InvalidAgent, SandboxBackend
from sandboxes.base import EXECUTABLE_ENTRY_POINT, EntryKind, SandboxLimits
from sandboxes.confinement import probe
from sandboxes.llm import LLMSandbox
from sandboxes.process import ProcessSandbox
from sandboxes.remote import RemoteSandbox

if TYPE_CHECKING:
    from sandboxes.docker import DockerSandbox

logger = logging.getLogger(__name__)

#: Stored logs are cut to this many characters (the sandbox already caps them).
LOG_CHARS = 200_000


def sandbox_backend(*, warm: bool = True) -> SandboxBackend:
    """The backend duels run in, with its settings. It is kept for the worker process, so
    its warm pool (``ARENA_SANDBOX_POOL_SIZE``) serves the next duels of the same
    revisions; ``warm=False`` (a validation, a revision's only duel for a while) gets one
    without a pool, so nothing is started ahead for nothing."""
    pool_size = settings.ARENA_SANDBOX_POOL_SIZE if warm else 0
    if settings.ARENA_SANDBOX != "docker" and not pool_size:
        return _process_sandbox(pool_size)
    # Keyed by process id: a forked worker must not use its parent's pool or threads.
    key = (
        os.getpid(),
        settings.ARENA_SANDBOX,
        settings.ARENA_SANDBOX_ROOT,
        pool_size,
        settings.ARENA_SANDBOX_POOL_IDLE_SECONDS,
    )
    with _SANDBOXES_LOCK:
        kept = _SANDBOXES.get(key)
        if kept is not None and not kept.confined and probe().confined:
            # The machine was put right (bubblewrap installed): its agents confined from
            # now on, without a restart.
            kept.close()
            del _SANDBOXES[key]
        if key not in _SANDBOXES:
            _SANDBOXES[key] = (
                _docker_sandbox(pool_size)
                if settings.ARENA_SANDBOX == "docker"
                else _process_sandbox(pool_size)
            )
        return _SANDBOXES[key]


def _process_sandbox(pool_size: int) -> ProcessSandbox:
    folders = data_folders()
    for folder in folders:
        # Made now, so that the agents' view covers those inside their runtime (only a
        # folder that exists can be covered).
        with contextlib.suppress(OSError):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    sandbox = ProcessSandbox(
        settings.ARENA_SANDBOX_ROOT,
        python=settings.ARENA_AGENT_PYTHON or None,
        # Covered in the agents' view if their runtime holds them (under /usr/local, say).
        hidden=folders,
        uid_base=settings.ARENA_SANDBOX_UID_BASE,
        uid_count=settings.ARENA_SANDBOX_UID_COUNT,
        pool_size=pool_size,
        pool_idle_seconds=settings.ARENA_SANDBOX_POOL_IDLE_SECONDS,
    )
    if not sandbox.confined and not _warned_unconfined.is_set():
        # Only organizers' code runs meanwhile, unless accepted knowingly (hosted_backend).
        _warned_unconfined.set()
        logger.warning("agents cannot be confined here: %s", sandbox.unconfined_reason)
    return sandbox


#: Said once per process (a validation makes a sandbox of its own each time).
_warned_unconfined = threading.Event()


def hosted_backend(revisions: list[Revision], *, warm: bool = True) -> SandboxBackend:
    """The sandbox that runs these revisions' code (``sandbox_backend``). Raises
    AgentsUnconfined when it cannot confine agents here and one of them may not run
    unconfined (``core.services.confinement.unconfined_refusal``): the duel or validation is then
    the platform's failure, never scored."""
    backend = sandbox_backend(warm=warm)
    if not backend.confined:
        unconfined_refusal(revisions, reason=backend.unconfined_reason)
    return backend


def _docker_sandbox(pool_size: int) -> DockerSandbox:
    from sandboxes.base_image import base_image_tag
    from sandboxes.docker import DockerSandbox  # the Docker SDK only where it is used

    return DockerSandbox(
        settings.ARENA_SANDBOX_ROOT,
        image=settings.ARENA_DOCKER_IMAGE or base_image_tag(settings.ARENA_BASE_IMAGE_SOURCE),
        connect_timeout=settings.ARENA_DOCKER_CONNECT_TIMEOUT,
        pool_size=pool_size,
        pool_idle_seconds=settings.ARENA_SANDBOX_POOL_IDLE_SECONDS,
    )


#: One per process and settings.
_SANDBOXES: dict[tuple[object, ...], ProcessSandbox | DockerSandbox] = {}
_SANDBOXES_LOCK = threading.Lock()


def sandbox_backend_close() -> None:
    """Discard the agents the kept sandboxes started ahead and wait for the docker
    sandbox's removals (they run in the background); the next duel starts afresh. Also
    done at the process's exit."""
    with _SANDBOXES_LOCK:
        sandboxes = list(_SANDBOXES.values())
        _SANDBOXES.clear()
    for sandbox in sandboxes:
        sandbox.close()


def revision_agent_source(revision: Revision, *, duel_id: int | None = None) -> AgentSource:
    """How to start the revision: its own image in the docker sandbox (files and
    dependencies in it), else its unpacked files (a build made for the process sandbox
    falls back to those in the docker sandbox too, mounted into the base image); an online
    revision is not started but reached through its competitor's seat; an LLM player's
    seat is played by the harness in a thread of this worker. In duel ``duel_id``, a
    person's seat is that game's own (``Competitor.seat_in``)."""
    competitor = revision.competitor
    if competitor.has_seat:
        seat = competitor.seat if duel_id is None else competitor.seat_in(duel_id)
        return AgentSource.remote(competitor.name, seat=seat)
    if competitor.is_llm:
        return AgentSource.llm(competitor.name)
    if settings.ARENA_SANDBOX == "docker" and revision.image:
        kind = (
            EntryKind.EXECUTABLE
            if revision.entry_point == EXECUTABLE_ENTRY_POINT
            else EntryKind.PYTHON
        )
        return AgentSource(
            path=revision.build_dir,
            entry=revision.entry_point,
            kind=kind,
            image=revision.image,
        )
    return AgentSource.from_path(revision.build_dir)


def _match_row(duel: Duel, record: MatchRecord) -> Match:
    guilty = sorted({fault.player for fault in record.faults})
    return Match(
        duel=duel,
        index=record.index,
        first_player=record.first_player,
        seats=record.seats,
        scores=record.scores,
        seed=record.seed,
        actions=record.actions,
        timings=record.timings,
        opening=record.opening,
        result=record.result.value,
        error_msg=record.error_msg,
        faults=[fault.as_json() for fault in record.faults],
        fault_player=guilty[0] if len(guilty) == 1 else None,
        fault_kind=record.faults[0].kind.value if record.faults else "",
        steps=len(record.actions),
        duration=record.duration,
    )


def _conversation_rows(
    duel: Duel, revisions: list[Revision], match: Match, record: MatchRecord
) -> list[MatchConversation]:
    """The conversations of the match's LLM seats (``MatchRecord.transcripts``)."""
    rows = []
    for player, conversation in sorted(record.transcripts.items()):
        summary = conversation.get("summary") or {}
        revision = revisions[int(player) - 1]
        rows.append(
            MatchConversation(
                match=match,
                player=int(player),
                rank=record.ranks[int(player) - 1],
                competitor_id=revision.competitor_id,
                model=str(conversation.get("model", ""))[:200],
                harness_version=str(conversation.get("harness_version", ""))[:16],
                harness_hash=str(conversation.get("harness_hash", ""))[:64],
                turns=conversation.get("turns") or [],
                latencies_ms=summary.get("latencies_ms") or [],
                # A fault charged to the seat ends the match against it.
                forfeited=any(fault.player == int(player) for fault in record.faults),
                **{counter: int(summary.get(counter) or 0) for counter in SUMMARY_COUNTERS},
            )
        )
    return rows


def _log_rows(match: Match, record: MatchRecord) -> list[MatchLog]:
    """What each player's agent wrote during its moves (``MatchRecord.move_logs``)."""
    return [
        MatchLog(
            match=match,
            player=player,
            moves=[{"step": step, "log": text} for step, text in sorted(steps.items())],
        )
        for player, steps in sorted(record.move_logs.items())
        if steps
    ]


def duel_store_result(*, duel: Duel, result: DuelResult, worker: str) -> None:
    """Store a played duel and its matches, in the caller's transaction, which holds the
    work it is part of (the duel's job, or its revision's validation); an infrastructure
    error is stored, never scored. The conversations of LLM seats, and what each agent
    logged during its moves, are stored with their matches."""
    document = result.as_json()
    failed = bool(result.infrastructure_error) or document["result"] == StoredResult.ERROR
    Match.objects.filter(duel=duel).delete()
    revisions = duel.revisions()
    if not failed:
        matches = Match.objects.bulk_create([_match_row(duel, record) for record in result.matches])
        MatchConversation.objects.bulk_create(
            row
            for match, record in zip(matches, result.matches, strict=True)
            for row in _conversation_rows(duel, revisions, match, record)
        )
        MatchLog.objects.bulk_create(
            row
            for match, record in zip(matches, result.matches, strict=True)
            for row in _log_rows(match, record)
        )
    seats = duel.players()
    for seat in seats:
        index = seat.number - 1
        seat.wins = 0 if failed else document["wins"][index]
        seat.score = 0 if failed else document["scores"][index]
        seat.rank = None if failed else document["ranks"][index]
        seat.errors = document["errors"][index]
        seat.restarts = document["restarts"][index]
        seat.log = result.logs[index][-LOG_CHARS:]
    DuelSeat.objects.bulk_update(seats, ["wins", "score", "rank", "errors", "restarts", "log"])
    Duel.objects.filter(pk=duel.pk).update(
        status=DuelStatus.FAILED if failed else DuelStatus.SUCCEEDED,
        played_by=worker,
        seed=result.seed,
        result="" if failed else document["result"],
        error=document["error_msg"][:10_000],
        draws=0 if failed else document["draws"],
        other_errors=document["other_errors"],
    )
    duel.refresh_from_db()


def _announcement(duel: Duel, player: int) -> dict[str, object]:
    """What an online agent is told as one of its duels begins (its ``duel`` event)."""
    opponents = [
        revision.competitor.name
        for number, revision in enumerate(duel.revisions(), start=1)
        if number != player
    ]
    return {
        "environment": duel.environment.name,
        "player": player,
        "players": duel.num_players,
        "opponent": opponents[0],
        "opponents": opponents,
        "matches": duel.num_matches,
        "tournament": duel.tournament_id,
    }


def seat_backend(
    revision: Revision, *, game: int, announcement: dict[str, object], kind: str = "duel"
) -> SandboxBackend:
    """The sandbox of one seat of a game (a duel, or with ``kind`` ``"evaluation"`` an
    evaluation; ``game`` is its id): the hosted agents', a remote seat for an online agent
    (told ``announcement`` as the game begins), the harness for an LLM player (with its
    key in clear: ArenaError when it cannot be had)."""
    competitor = revision.competitor
    if competitor.is_llm:
        return LLMSandbox(competitor.llm.config())
    if competitor.has_seat:
        return RemoteSandbox(
            seat_bus(),
            duel=game,
            # A person who closed the tab loses once their move's time is up, as
            # the clock would have it, and may reload the page meanwhile.
            grace=settings.ARENA_HUMAN_MOVE_SECONDS
            if competitor.is_human
            else settings.ARENA_ONLINE_GRACE_SECONDS,
            allowance=settings.ARENA_ONLINE_ALLOWANCE_SECONDS,
            announcement=announcement,
            kind=kind,
        )
    return hosted_backend([revision])


def duel_backends(duel: Duel) -> tuple[SandboxBackend, ...]:
    """Each player's sandbox (``seat_backend``)."""
    return tuple(
        seat_backend(revision, game=duel.pk, announcement=_announcement(duel, player))
        for player, revision in enumerate(duel.revisions(), start=1)
    )


def seat_clock(competitors: list[Competitor], game: str) -> dict[str, float]:
    """The clock of every seat of a game with these players (``run_duel`` overrides):
    a person's if one plays, else the LLM clock if an LLM player does (fair, and a
    model's answer takes seconds where a program's takes microseconds), else the game's
    own (none)."""
    if any(competitor.is_human for competitor in competitors):
        # And no opening (``referee.openings``): a person opens their own game.
        return {**human_clock(), "opening_moves": 0}
    if any(competitor.is_llm for competitor in competitors):
        return llm_clock(load_info(game))
    return {}


def duel_play(*, duel_id: int) -> None:
    """The duel job (``core.jobs.worker.job_run``): play a queued duel with the referee and
    store it, telling its tournament. Agents this host cannot build give it back, for any
    worker of any host (never the agents' fault)."""
    job_run(kind=JobKind.DUEL, subject_id=duel_id, work=_duel_work)


def _duel_work(claimed: Claimed) -> Done:
    duel = Duel.objects.with_seats().get(pk=claimed.job.subject_id)
    claimed.hold_builds(duel.revisions(), what=f"duel {duel.pk}")
    result = _duel_result(duel)

    def store() -> Outcome:
        duel_store_result(duel=duel, result=result, worker=claimed.worker)
        # In the same transaction: a worker killed after it leaves the duel stored and
        # rated, one killed before neither (it is played again once its lease ends),
        # never stored and not rated.
        duel_finished.send(sender=Duel, duel=duel)
        return Outcome(duel.status == DuelStatus.SUCCEEDED, error=duel.error)

    # The replay takes over from the live view.
    return Done(store=store, then=LiveEvent.objects.filter(duel_id=duel.pk).delete)


def environment_limits(environment: Environment) -> dict[str, Any]:
    """The referee's limits that the environment's row sets: an OpenSpiel game's (its
    organizer may have changed them in the admin); none for a built-in game, whose
    ``info.yml`` the referee reads itself."""
    if not environment.spec:
        return {}
    return {
        "move_time": environment.move_time,
        "time_bank": environment.time_bank,
        "startup_time": environment.startup_time,
        "limits": SandboxLimits(
            memory_mb=environment.memory_mb, cpu_seconds=environment.cpu_seconds
        ),
    }


def _duel_result(duel: Duel) -> DuelResult:
    """Play the claimed duel, whose agents' builds this host holds."""
    environment = duel.environment
    game = environment.game
    revisions = duel.revisions()
    try:
        sources = [revision_agent_source(revision, duel_id=duel.pk) for revision in revisions]
        backends = duel_backends(duel)
    except (InvalidAgent, ArenaError) as error:
        return _infrastructure_failure(duel, unplayable(error))
    clock = seat_clock([revision.competitor for revision in revisions], game)
    with duel_live_feed(duel_id=duel.pk) as feed:
        return run_duel(
            game,
            sources,
            backend=backends,
            seed=duel.seed,
            matches=duel.num_matches,
            progress=feed.publish,
            share_cpu=settings.ARENA_DUEL_SHARE_CPU,
            **{**environment_limits(environment), **clock},
        )


def human_clock() -> dict[str, float]:
    """The clock of every seat of a game with a person in it (``run_duel`` overrides):
    ``ARENA_HUMAN_MOVE_SECONDS`` a move, ``ARENA_HUMAN_TIME_BANK_SECONDS`` of bank a
    match, and a move's time to open the page and be ready."""
    return {
        "move_time": settings.ARENA_HUMAN_MOVE_SECONDS,
        "time_bank": settings.ARENA_HUMAN_TIME_BANK_SECONDS,
        "startup_time": settings.ARENA_HUMAN_MOVE_SECONDS,
    }


def duel_live_feed(*, duel_id: int) -> LiveFeed:
    """Where the referee's events of a duel go for its spectators: rows of ``LiveEvent``,
    a batch at most every ``ARENA_LIVE_FLUSH_SECONDS`` (what an earlier attempt left is
    dropped first)."""
    LiveEvent.objects.filter(duel_id=duel_id).delete()

    def store(events: list[dict[str, object]]) -> None:
        lines = b"\n".join(orjson.dumps(event) for event in events).decode()
        LiveEvent.objects.create(duel_id=duel_id, lines=lines)

    return LiveFeed(
        store,
        interval=settings.ARENA_LIVE_FLUSH_SECONDS,
        name=f"duel-{duel_id}",
        # Resolved on the feed's thread: its own connection, not the caller's.
        thread_done=lambda: connection.close(),
    )


def unplayable(error: InvalidAgent | ArenaError) -> str:
    """Why a game's seats cannot be set up, as its infrastructure error: a built revision
    whose files are gone, agents this worker cannot confine, or an LLM player's key that
    cannot be read here. The platform's problem, never charged to the agent."""
    if isinstance(error, InvalidAgent):
        return f"a revision's build is missing: {error}"
    if isinstance(error, AgentsUnconfined):
        return error.message
    return f"an LLM seat cannot be played: {error.message}"


def _infrastructure_failure(duel: Duel, problem: str) -> DuelResult:
    return DuelResult(
        environment=duel.environment.name,
        players=[str(revision) for revision in duel.revisions()],
        seed=duel.seed,
        infrastructure_error=problem,
    )
