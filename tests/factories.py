"""factory_boy factories, one per model in ``core.models``.

Every factory makes a valid row with realistic values: an environment is a real
game (``tic_tac_toe`` by default) with the limits from its ``info.yml``, a revision
holds a real agent (the game's random player), a match is a real, replayable game.
Override anything: ``RevisionFactory(competitor=bot, validated=True)``.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import factory
from django.core.files.base import ContentFile
from django.utils import timezone
from factory.django import DjangoModelFactory

from core.models import (
    ApiToken,
    Competition,
    CompetitionPhase,
    Competitor,
    CompetitorKind,
    Duel,
    DuelResult,
    DuelStatus,
    Environment,
    Evaluation,
    InviteCode,
    Job,
    LeaderboardEntry,
    LLMPlayer,
    Match,
    MatchConversation,
    Participant,
    PhasePlays,
    Rating,
    RatingChange,
    Revision,
    Role,
    ScoreCompetition,
    StepStatus,
    Tournament,
    TournamentFormat,
    User,
)
from core.models.accounts import hash_token
from core.models.submissions import STEPS, resend_at_default
from core.secrets import secret_encrypt
from core.services.uploads import upload_content_store
from environments.registry import load_info, make_environment
from referee.openings import duel_openings, opening_turn

#: Every factory-made user's password.
PASSWORD = "correct horse battery staple"
EXAMPLE_PLAYERS_DIR = Path(__file__).resolve().parents[1] / "example_players"


def example_player_source(environment_name: str) -> bytes:
    """The game's random player: a small agent that validates."""
    path = EXAMPLE_PLAYERS_DIR / environment_name / "random_player.py"
    if not path.is_file():
        path = EXAMPLE_PLAYERS_DIR / "tic_tac_toe" / "random_player.py"
    return path.read_bytes()


def _minutes_ago(minutes: int) -> factory.LazyFunction:
    return factory.LazyFunction(lambda: timezone.now() - timedelta(minutes=minutes))


Row = TypeVar("Row")


class ModelFactory(DjangoModelFactory[Row]):
    """A factory of rows of ``Row``: ``RevisionFactory()`` is a ``Revision`` (to mypy too)."""

    class Meta:
        abstract = True

    if TYPE_CHECKING:
        # factory_boy's call makes the row, but its __new__ is untyped, so mypy takes the
        # call for a new factory; and mypy wants __new__ to return an instance of its class.
        def __new__(cls, *args: Any, **kwargs: Any) -> Row:  # type: ignore[misc]
            ...


# --- accounts ---------------------------------------------------------------------


class UserFactory(ModelFactory[User]):
    class Meta:
        model = User

    email = factory.Sequence(lambda n: f"user{n}@example.com")
    display_name = factory.Sequence(lambda n: f"User {n}")
    role = Role.ATTENDEE
    password = factory.django.Password(PASSWORD)


class OrganizerFactory(UserFactory):
    email = factory.Sequence(lambda n: f"organizer{n}@example.com")
    display_name = factory.Sequence(lambda n: f"Organizer {n}")
    role = Role.ORGANIZER
    is_staff = True


class InviteCodeFactory(ModelFactory[InviteCode]):
    class Meta:
        model = InviteCode

    code = factory.Sequence(lambda n: f"invite-{n}")
    note = "made by a test"
    max_uses = 100
    created_by = factory.SubFactory(OrganizerFactory)


class ApiTokenFactory(ModelFactory[ApiToken]):
    """Pass ``secret=`` to know the token: only its hash is stored."""

    class Meta:
        model = ApiToken

    class Params:
        secret = factory.LazyFunction(ApiToken.new_secret)

    user = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"token {n}")
    hint = factory.LazyAttribute(lambda token: token.secret[: len(ApiToken.PREFIX) + 4])
    token_hash = factory.LazyAttribute(lambda token: hash_token(token.secret))


# --- submissions --------------------------------------------------------------------


def _info(field: str) -> factory.LazyAttribute:
    return factory.LazyAttribute(lambda environment: getattr(load_info(environment.name), field))


class EnvironmentFactory(ModelFactory[Environment]):
    """A game from ``environments/``; the row is shared by every factory that needs it."""

    class Meta:
        model = Environment
        django_get_or_create = ("name",)

    name = "tic_tac_toe"
    title = _info("title")
    description = _info("description")
    rules = _info("rules")
    players = _info("players")
    matches_per_duel = _info("matches_per_duel")
    validation_matches = _info("validation_matches")
    move_time = _info("move_time")
    time_bank = _info("time_bank")
    startup_time = _info("startup_time")
    memory_mb = _info("memory_mb")
    cpu_seconds = _info("cpu_seconds")
    # Off unless a test asks for it: the tournament manager would open a ladder of the
    # game beside the tournaments a test plays (an imported game has it on).
    standing_competition = False


class CompetitorFactory(ModelFactory[Competitor]):
    class Meta:
        model = Competitor

    owner = factory.SubFactory(UserFactory)
    environment = factory.SubFactory(EnvironmentFactory)
    name = factory.Sequence(lambda n: f"bot-{n}")
    is_public = False


def _next_version(revision: Any) -> int:
    competitor = revision.competitor
    if competitor.pk is None:
        return 1
    latest = competitor.revisions.order_by("-version").values_list("version", flat=True).first()
    return (latest or 0) + 1


class RevisionFactory(ModelFactory[Revision]):
    """A fresh upload (build and validation queued); ``validated=True`` for a usable one."""

    class Meta:
        model = Revision

    class Params:
        code = factory.LazyAttribute(
            lambda revision: example_player_source(revision.competitor.environment.name)
        )
        validated = factory.Trait(
            build_status=StepStatus.SUCCEEDED,
            build_started_at=_minutes_ago(10),
            build_ended_at=_minutes_ago(9),
            build_log="built",
            validation_status=StepStatus.SUCCEEDED,
            validation_started_at=_minutes_ago(9),
            validation_ended_at=_minutes_ago(8),
            validation_log="validated by self-play",
        )

    competitor = factory.SubFactory(CompetitorFactory)
    version = factory.LazyAttribute(_next_version)
    uploaded_by = factory.SelfAttribute("competitor.owner")
    filename = "random_player.py"
    # What the upload service records for a single .py file (it runs as main.py).
    entry_point = "main.py"
    source = factory.LazyAttribute(lambda revision: ContentFile(revision.code, revision.filename))
    sha256 = factory.LazyAttribute(lambda revision: hashlib.sha256(revision.code).hexdigest())
    # Stored as the upload service stores it: in the database, where every host reads it.
    upload = factory.LazyAttribute(
        lambda revision: upload_content_store(content=revision.code, sha256=revision.sha256)
    )
    size = factory.LazyAttribute(lambda revision: len(revision.code))

    @classmethod
    def _create(cls, model_class: type[Revision], *args: Any, **kwargs: Any) -> Revision:
        """The revision, and a job for each step asked for (its status not ``none``), as
        the services make them; ``<step>_<field>`` (``build_error``, ``validation_attempts``,
        ``build_lease_expires_at``...) sets that field of the step's job."""
        jobs = {
            step: {
                field: kwargs.pop(f"{step}_{field}")
                for field in JOB_FIELDS
                if f"{step}_{field}" in kwargs
            }
            for step in STEPS
        }
        revision = super()._create(model_class, *args, **kwargs)
        for step, fields in jobs.items():
            status = getattr(revision, f"{step}_status")
            if status == StepStatus.NONE:
                continue
            # A queued validation waits for its build; other queued steps were sent.
            waiting = step == "validation" and revision.build_status != StepStatus.SUCCEEDED
            defaults = {
                "attempts": 0 if status == StepStatus.QUEUED else 1,
                "resend_at": (
                    resend_at_default() if status == StepStatus.QUEUED and not waiting else None
                ),
            }
            Job.objects.create(
                kind=step, revision=revision, status=status, **{**defaults, **fields}
            )
        return revision


#: A step's fields that ``RevisionFactory`` gives its job.
JOB_FIELDS = (
    "started_at",
    "ended_at",
    "error",
    "log",
    "attempts",
    "lease_owner",
    "lease_expires_at",
    "resends",
    "resend_at",
)


# --- competitions -------------------------------------------------------------------


class TournamentFactory(ModelFactory[Tournament]):
    class Meta:
        model = Tournament

    environment = factory.SubFactory(EnvironmentFactory)
    name = factory.Sequence(lambda n: f"Tournament {n}")
    format = TournamentFormat.ROUND_ROBIN
    matches_per_duel = factory.SelfAttribute("environment.matches_per_duel")
    created_by = factory.SubFactory(OrganizerFactory)


def _validated_revision_in_tournament() -> factory.SubFactory:
    # From the competitor's declarations, "..." is the row that holds the revision.
    return factory.SubFactory(
        RevisionFactory,
        validated=True,
        competitor__environment=factory.SelfAttribute("...tournament.environment"),
    )


class ParticipantFactory(ModelFactory[Participant]):
    class Meta:
        model = Participant

    tournament = factory.SubFactory(TournamentFactory)
    revision = _validated_revision_in_tournament()


class DuelFactory(ModelFactory[Duel]):
    """A queued tournament duel; ``validation=True`` for a self-play duel of a revision,
    ``finished=True`` for a succeeded one."""

    class Meta:
        model = Duel
        skip_postgeneration_save = True

    class Params:
        validation = factory.Trait(
            tournament=None,
            is_validation=True,
            revisions=factory.LazyFunction(lambda: [RevisionFactory()] * 2),
        )
        finished = factory.Trait(
            status=DuelStatus.SUCCEEDED,
            result=DuelResult.DRAW,
            started_at=_minutes_ago(2),
            ended_at=_minutes_ago(1),
        )

    tournament = factory.SubFactory(TournamentFactory)
    #: Seat 1's revision first; self-play repeats one; None: a new validated revision of
    #: the game.
    revisions = (None, None)
    environment = factory.LazyAttribute(
        lambda duel: (
            duel.tournament.environment
            if duel.tournament
            else duel.revisions[0].competitor.environment
        )
    )
    num_matches = factory.LazyAttribute(
        lambda duel: (
            duel.tournament.matches_per_duel
            if duel.tournament
            else duel.environment.validation_matches
        )
    )
    seed = factory.Sequence(lambda n: 1000 + n)
    #: Its job (``core.jobs``), as the services that queue duels make it; none for a
    #: validation duel, which was its revision's validation's work.
    job = factory.PostGeneration(lambda duel, create, extracted, **_: _job_of(duel, "duel"))

    @classmethod
    def _create(cls, model_class: type[Duel], *args: Any, **kwargs: Any) -> Duel:
        """``seat_values``: what each seat did, seat 1's first (``{"score": 1, ...}``)."""
        revisions = [
            RevisionFactory(validated=True, competitor__environment=kwargs["environment"])
            if revision is None
            else revision
            for revision in kwargs.pop("revisions")
        ]
        seat_values = kwargs.pop("seat_values", [])
        duel = model_class.objects.seated(revisions, *args, **kwargs)
        for seat, values in zip(duel.players(), seat_values, strict=False):
            for field, value in values.items():
                setattr(seat, field, value)
            seat.save()
        return duel


def _job_of(subject: Duel | Evaluation, kind: str) -> Job | None:
    """Its job, which takes the times it was given (``started_at``, ``ended_at``): a duel
    or an evaluation of its own keeps none, as the workers leave it."""
    if subject.is_validation:
        return None
    job = Job.objects.create(
        kind=kind,
        **{kind: subject},
        status=subject.status,
        attempts=0 if subject.status == DuelStatus.QUEUED else 1,
        started_at=subject.started_at,
        ended_at=subject.ended_at,
    )
    if subject.started_at or subject.ended_at:
        type(subject).objects.filter(pk=subject.pk).update(started_at=None, ended_at=None)
        subject.started_at = subject.ended_at = None
    return job


def queued_duel(revisions: list[Revision], **fields: Any) -> Duel:
    """A duel of ``revisions`` (seat 1's first) outside any tournament, queued with its
    job (``Duel.objects.seated`` takes ``fields``), for a test that plays it."""
    duel = Duel.objects.seated(revisions, **fields)
    _job_of(duel, "duel")
    return duel


def scheduled_competition(
    *,
    opens: datetime,
    deadline: datetime,
    daily_limit: int | None = None,
    total_limit: int | None = None,
    **fields: Any,
) -> Competition:
    """A tic-tac-toe competition ("cup", "The cup" unless ``fields`` say otherwise) with a
    development phase from ``opens`` (its upload limits) and a final at ``deadline``."""
    competition = Competition.objects.create(
        **{"environment": EnvironmentFactory(), "slug": "cup", "title": "The cup", **fields}
    )
    CompetitionPhase.objects.create(
        competition=competition,
        name="development",
        starts_at=opens,
        daily_limit=daily_limit,
        total_limit=total_limit,
    )
    CompetitionPhase.objects.create(
        competition=competition,
        name="final",
        starts_at=deadline,
        uploads_open=False,
        plays=PhasePlays.FINAL,
    )
    return competition


class ScoreCompetitionFactory(ModelFactory[ScoreCompetition]):
    class Meta:
        model = ScoreCompetition

    environment = factory.SubFactory(EnvironmentFactory, name="cartpole")
    name = factory.Sequence(lambda n: f"Score competition {n}")
    episodes = 3
    seed = factory.Sequence(lambda n: 500 + n)
    created_by = factory.SubFactory(OrganizerFactory)


class EvaluationFactory(ModelFactory[Evaluation]):
    """A queued evaluation of a validated revision; ``finished=True`` for a played one whose
    episodes all returned ``returns``."""

    class Meta:
        model = Evaluation
        skip_postgeneration_save = True

    class Params:
        returns = (10.0, 20.0, 30.0)
        finished = factory.Trait(
            status=DuelStatus.SUCCEEDED,
            started_at=_minutes_ago(2),
            ended_at=_minutes_ago(1),
            mean_return=20.0,
            ci_low=20.0 - 4.303 * 10.0 / 3**0.5,
            ci_high=20.0 + 4.303 * 10.0 / 3**0.5,
            episodes_played=3,
            episodes=factory.LazyAttribute(
                lambda evaluation: [
                    {
                        "index": index,
                        "seed": seed,
                        "return": value,
                        "steps": 0,
                        "terminated": True,
                        "truncated": False,
                        "error_msg": "",
                        "faults": [],
                        "actions": [],
                        "timings": [],
                        "duration": 0.0,
                    }
                    for index, (seed, value) in enumerate(
                        zip(evaluation.seeds, evaluation.returns, strict=True)
                    )
                ]
            ),
        )

    competition = factory.SubFactory(ScoreCompetitionFactory)
    revision = factory.SubFactory(
        RevisionFactory,
        validated=True,
        competitor__environment=factory.SelfAttribute("...competition.environment"),
    )
    seeds = factory.LazyAttribute(lambda evaluation: evaluation.competition.seeds)
    job = factory.PostGeneration(
        lambda evaluation, create, extracted, **_: _job_of(evaluation, "evaluation")
    )


def play_first_legal_actions(
    environment_name: str, seed: int, opening: list[list[Any]] | None = None
) -> dict[str, Any]:
    """A real match in which every player takes its first legal action, after the
    ``opening`` steps if given."""
    environment = make_environment(environment_name)
    environment.reset(seed)
    actions: list[list[Any]] = []
    for step in opening or []:
        environment.step({seat: action for seat, action in enumerate(step) if action is not None})
        actions.append(list(step))
    while not environment.is_terminal():
        movers = environment.to_move()
        chosen = {player: environment.legal_actions(player)[0] for player in movers}
        environment.step(chosen)
        actions.append([chosen.get(seat) for seat in range(environment.num_players)])
    return {"actions": actions, "scores": environment.scores()}


def _opening(match: Any) -> list[list[Any]]:
    """The opening the referee plays in this match of its duel (``referee.openings``): so
    that, as in a real duel, its matches differ (identical ones count once)."""
    name = match.duel.environment.name
    turn = opening_turn(match.index, len(match.seats))
    openings = duel_openings(
        make_environment(name),
        duel_seed=match.duel.seed,
        moves=load_info(name).opening_moves,
        turns=turn + 1,
    )
    return openings[turn]


def _match_scores(match: Any) -> list[float]:
    """Each duel player's score, from the game's scores by seat."""
    seats = match.seats
    return [match.played["scores"][seats.index(player)] for player in range(1, len(seats) + 1)]


def _match_result(match: Any) -> str:
    first, second = match.scores
    if first > second:
        return DuelResult.PLAYER_1_WIN
    if second > first:
        return DuelResult.PLAYER_2_WIN
    return DuelResult.DRAW


class MatchFactory(ModelFactory[Match]):
    """The next match of a duel, played for real (so it replays) by first legal actions
    after the duel's opening."""

    class Meta:
        model = Match

    class Params:
        played = factory.LazyAttribute(
            lambda match: play_first_legal_actions(
                match.duel.environment.name, match.seed, _opening(match)
            )
        )

    duel = factory.SubFactory(DuelFactory, finished=True)
    index = factory.LazyAttribute(lambda match: match.duel.matches.count() if match.duel.pk else 0)
    # Player 1 takes the first seat in even-numbered matches, as the referee does.
    first_player = factory.LazyAttribute(lambda match: 1 if match.index % 2 == 0 else 2)
    seats = factory.LazyAttribute(lambda match: [1, 2] if match.first_player == 1 else [2, 1])
    seed = factory.LazyAttribute(lambda match: match.duel.seed * 1000 + match.index)
    actions = factory.LazyAttribute(lambda match: match.played["actions"])
    timings = factory.LazyAttribute(
        lambda match: [
            [None if action is None else 0.001 for action in step] for step in match.actions
        ]
    )
    steps = factory.LazyAttribute(lambda match: len(match.actions))
    scores = factory.LazyAttribute(_match_scores)
    result = factory.LazyAttribute(_match_result)
    duration = 0.05


# --- ratings ------------------------------------------------------------------------


class RatingFactory(ModelFactory[Rating]):
    class Meta:
        model = Rating

    competitor = factory.SubFactory(CompetitorFactory)


class RatingChangeFactory(ModelFactory[RatingChange]):
    """A change after a match: the rating goes up by one and grows more certain."""

    class Meta:
        model = RatingChange

    rating = factory.SubFactory(RatingFactory)
    reason = "match"
    mu_before = factory.SelfAttribute("rating.mu")
    sigma_before = factory.SelfAttribute("rating.sigma")
    mu_after = factory.LazyAttribute(lambda change: change.mu_before + 1)
    sigma_after = factory.LazyAttribute(lambda change: change.sigma_before * 0.95)


class LeaderboardEntryFactory(ModelFactory[LeaderboardEntry]):
    """A ranked entry of the published leaderboard, for ``revision``'s competitor."""

    class Meta:
        model = LeaderboardEntry

    revision = factory.SubFactory(RevisionFactory, validated=True)
    competitor = factory.SelfAttribute("revision.competitor")
    environment = factory.SelfAttribute("revision.competitor.environment")
    rank = 1
    rank_best = 1
    rank_worst = 2
    score = 1550.0
    score_sd = 90.0
    matches = 10
    wins = 6
    draws = 1
    losses = 3
    fitted_at = factory.LazyFunction(timezone.now)


# --- LLM players --------------------------------------------------------------------


class LLMPlayerFactory(ModelFactory[LLMPlayer]):
    """An LLM competitor's settings (``api_key=`` stores that key, encrypted); its
    competitor is of kind LLM, with a first revision ready to play."""

    class Meta:
        model = LLMPlayer
        skip_postgeneration_save = True

    class Params:
        api_key = ""

    competitor = factory.SubFactory(CompetitorFactory, kind=CompetitorKind.LLM, is_public=True)
    base_url = "http://127.0.0.1:8011/v1"
    model = "rule-based"
    temperature = 0.2
    max_tokens = 256
    api_key_encrypted = factory.LazyAttribute(lambda player: secret_encrypt(player.api_key))

    @factory.post_generation
    def revision(player: LLMPlayer, create: bool, extracted: Any, **kwargs: Any) -> None:
        if create and not player.competitor.revisions.exists():
            RevisionFactory(
                competitor=player.competitor, validated=True, filename="", size=0, sha256=""
            )


def conversation_turn(
    *,
    step: int,
    legal_actions: list[Any],
    answer: str,
    action: Any,
    verdict: str = "legal",
    retry: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One move of an LLM seat as ``llm.records`` writes it (a refused first answer
    with ``retry=``: its answer, verdict and error)."""
    attempts = []
    if retry is not None:
        attempts.append(
            {
                "kind": "move",
                "messages": [{"role": "user", "content": f"Your move (step {step})."}],
                "answer": retry["answer"],
                "verdict": retry["verdict"],
                "error": retry["error"],
                "parsed": None,
                "prompt_tokens": 100,
                "completion_tokens": 5,
                "latency_ms": 20.0,
                "finish_reason": "stop",
                "provider_errors": [],
            }
        )
    attempts.append(
        {
            "kind": "retry" if retry is not None else "move",
            "messages": [
                {"role": "system", "content": "You play a game."},
                {"role": "user", "content": f"Your move (step {step})."},
            ],
            "answer": answer,
            "verdict": verdict,
            "error": "",
            "parsed": action,
            "prompt_tokens": 100,
            "completion_tokens": 5,
            "latency_ms": 20.0,
            "finish_reason": "stop",
            "provider_errors": [],
        }
    )
    return {
        "match": 0,
        "step": step,
        "request": step + 1,
        "legal_actions": legal_actions,
        "attempts": attempts,
        "action": action,
        "outcome": verdict,
        "latency_ms": 20.0 * len(attempts),
        "prompt_tokens": 100 * len(attempts),
        "completion_tokens": 5 * len(attempts),
    }


class MatchConversationFactory(ModelFactory[MatchConversation]):
    """An LLM seat's conversation in a match: one legal turn per move of its seat."""

    class Meta:
        model = MatchConversation

    match = factory.SubFactory(MatchFactory)
    player = 1
    rank = factory.LazyAttribute(
        lambda row: 1 + sum(other > row.match.scores[row.player - 1] for other in row.match.scores)
    )
    competitor = factory.LazyAttribute(
        lambda row: row.match.duel.revisions()[row.player - 1].competitor
    )
    model = "rule-based"
    harness_version = "1"
    harness_hash = "0" * 64
    turns = factory.LazyAttribute(
        lambda row: [
            conversation_turn(
                step=step,
                legal_actions=[actions[seat]],
                answer=f"ANSWER: {actions[seat]}",
                action=actions[seat],
            )
            for step, actions in enumerate(row.match.actions)
            for seat in [row.match.seats.index(row.player)]
            if actions[seat] is not None
        ]
    )
    moves = factory.LazyAttribute(lambda row: len(row.turns))
    requests = factory.LazyAttribute(lambda row: len(row.turns))
    prompt_tokens = factory.LazyAttribute(lambda row: 100 * len(row.turns))
    completion_tokens = factory.LazyAttribute(lambda row: 5 * len(row.turns))
    latencies_ms = factory.LazyAttribute(lambda row: [20.0] * len(row.turns))
