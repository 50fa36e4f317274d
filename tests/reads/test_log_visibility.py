"""An agent's log follows one rule wherever it shows (``reads.access.can_see_logs``): its
owner's and the organizers'; everyone else's only once the duel or evaluation is over, if
the competitor is public and its owner shares its logs. A public competitor's code and
pages are anyone's; its logs are not, until its owner says so.

Alice's agents write a secret into every log Arena keeps of them: her tic-tac-toe agent's
duel log, its log at a move of the replay, its validation's log and report (and its
self-play's log); her LLM player's conversation in the same duel; her cartpole agent's
evaluation log in a score competition and its validation evaluation's; her cartpole LLM
player's conversations in an evaluation. Each kind of visitor walks every page and API
operation that can show one of them, for each kind of competitor, while it is played and
once it is over: each place shows the secrets it holds exactly to the visitors the rule
lets read them, and the places that show no log never do, whoever looks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from core.models import DuelStatus, Evaluation, MatchLog, StepStatus, User
from tests.factories import (
    CompetitorFactory,
    DuelFactory,
    EvaluationFactory,
    LLMPlayerFactory,
    MatchConversationFactory,
    MatchFactory,
    RevisionFactory,
    ScoreCompetitionFactory,
    TournamentFactory,
    conversation_turn,
)
from tests.support.tokens import Bearer

pytestmark = pytest.mark.django_db

#: What every planted log holds, followed by which log it is ("secret-b7e4-duel-log").
SECRET = "secret-b7e4"
PLANTED = re.compile(SECRET + r"-([a-z-]+)")

ANONYMOUS = "anonymous"
ATTENDEE = "carol, another attendee"
OWNER = "alice, the owner"
ORGANIZER = "an organizer"
VISITORS = (ANONYMOUS, ATTENDEE, OWNER, ORGANIZER)
EVERYONE = frozenset(VISITORS)
OWNER_AND_ORGANIZERS = frozenset({OWNER, ORGANIZER})


@dataclass(frozen=True)
class Case:
    """Alice's competitors as they are, and who reads their logs."""

    competitor: str
    is_public: bool
    share_logs: bool
    #: The duels and evaluations (and validations) are over, rather than being played.
    over: bool
    readers: frozenset[str]

    def __str__(self) -> str:
        return f"{self.competitor}, {'over' if self.over else 'being played'}"


CASES = [
    Case("private", False, False, True, OWNER_AND_ORGANIZERS),
    # Sharing does nothing while the competitor is private.
    Case("private, logs shared", False, True, True, OWNER_AND_ORGANIZERS),
    # Public: its code is anyone's, its logs its owner's until she shares them.
    Case("public, logs not shared", True, False, True, OWNER_AND_ORGANIZERS),
    Case("public, logs shared", True, True, True, EVERYONE),
    Case("private", False, False, False, OWNER_AND_ORGANIZERS),
    Case("public, logs not shared", True, False, False, OWNER_AND_ORGANIZERS),
    # Shared logs are everyone's only once the duel or evaluation is over.
    Case("public, logs shared", True, True, False, OWNER_AND_ORGANIZERS),
]


@dataclass(frozen=True)
class Place:
    """A page, or an API operation (``api``), and the logs it shows to their readers."""

    what: str
    path: str
    shows: tuple[str, ...] = ()
    api: bool = False


def _conversation(step: int, action: Any, log_name: str) -> dict[str, Any]:
    return conversation_turn(
        step=step,
        legal_actions=[action],
        answer=f"{SECRET}-{log_name} ANSWER: {action}",
        action=action,
    )


def _episode(index: int, seed: int, conversation: dict[str, Any]) -> dict[str, Any]:
    """An LLM seat's episode of cartpole, as ``referee.evaluation`` records it."""
    return {
        "index": index,
        "seed": seed,
        "return": 1.0,
        "steps": 1,
        "terminated": True,
        "truncated": False,
        "error_msg": "",
        "faults": [],
        "actions": [[0]],
        "timings": [[0.001]],
        "duration": 0.01,
        "conversation": conversation,
    }


def _evaluation(revision: Any, *, case: Case, log: str = "", **fields: Any) -> Evaluation:
    played = {"finished": True} if case.over else {"status": DuelStatus.RUNNING}
    return EvaluationFactory(revision=revision, log=log, **played, **fields)


@pytest.fixture
def places(case: Case, alice: User) -> list[Place]:
    """Alice's agents as ``case`` says, a secret planted in each of their logs; every
    place that shows them, their duels or their evaluations."""
    mine = {"owner": alice, "is_public": case.is_public, "share_logs": case.share_logs}
    played = {"finished": True} if case.over else {"status": DuelStatus.RUNNING}
    step = StepStatus.SUCCEEDED if case.over else StepStatus.RUNNING
    failed = StepStatus.FAILED if case.over else StepStatus.RUNNING

    # Tic-tac-toe: her agent against her LLM player in a public tournament.
    agent = CompetitorFactory(name="alices-agent", **mine)
    validated = RevisionFactory(
        competitor=agent,
        validated=True,
        validation_status=step,
        validation_log=f"validated\n--- agent log (first copy) ---\n{SECRET}-validation-log",
    )
    refused = RevisionFactory(
        competitor=agent,
        build_status=StepStatus.SUCCEEDED,
        validation_status=failed,
        validation_error="validation failed: crash\nlast lines of the agent's log:\n"
        f"{SECRET}-validation-report",
    )
    llm = LLMPlayerFactory(**{f"competitor__{field}": value for field, value in mine.items()})
    duel = DuelFactory(
        tournament=TournamentFactory(environment=agent.environment, is_public=True),
        revisions=[validated, llm.competitor.revisions.get()],
        seat_values=[{"log": f"{SECRET}-duel-log"}],
        **played,
    )
    match = MatchFactory(duel=duel)
    MatchLog.objects.create(match=match, player=1, moves=[{"step": 0, "log": f"{SECRET}-move"}])
    conversation = MatchConversationFactory(match=match, player=2)
    first = conversation.turns[0]
    conversation.turns = [_conversation(first["step"], first["action"], "conversation")]
    conversation.save()
    self_play = DuelFactory(
        validation=True,
        revisions=[validated, validated],
        seat_values=[{"log": f"{SECRET}-self-play-log"}],
        **played,
    )

    # Cartpole: her agent and her LLM player in a public score competition.
    competition = ScoreCompetitionFactory(is_public=True)
    cartpole = competition.environment
    balancer = RevisionFactory(
        competitor=CompetitorFactory(name="alices-balancer", environment=cartpole, **mine),
        validated=True,
    )
    evaluation = _evaluation(
        balancer, case=case, competition=competition, log=f"{SECRET}-evaluation-log"
    )
    validation = _evaluation(
        balancer,
        case=case,
        competition=None,
        is_validation=True,
        seeds=[1, 2, 3],
        log=f"{SECRET}-validation-evaluation-log",
    )
    pusher = LLMPlayerFactory(
        competitor__environment=cartpole,
        **{f"competitor__{field}": value for field, value in mine.items()},
    )
    talked = _evaluation(
        pusher.competitor.revisions.get(),
        case=case,
        competition=competition,
        episodes=[
            _episode(
                index,
                seed,
                {
                    "model": "rule-based",
                    "harness_version": "1",
                    "harness_hash": "0" * 64,
                    "turns": [_conversation(0, 0, "evaluation-conversation")],
                },
            )
            for index, seed in enumerate(competition.seeds)
        ],
    )

    api = "/api/v1"
    replay = f"{api}/duels/{duel.pk}/matches/{match.index}"
    revisions = f"{api}/competitors/{agent.environment.name}/{agent.name}/revisions"
    duel_download = reverse("duel_conversations", args=[duel.pk])
    match_download = reverse("match_conversations", args=[duel.pk, match.index])
    players = [llm.competitor, pusher.competitor]
    competitors = [agent, balancer.competitor, *players]
    evaluations = [evaluation, validation, talked]
    return [
        # Where an agent's log shows.
        Place("the duel's page", duel.get_absolute_url(), ("duel-log",)),
        Place("the replay", match.get_absolute_url(), ("conversation", "move")),
        Place("the duel's conversations", duel_download, ("conversation",)),
        Place("the match's conversations", match_download, ("conversation",)),
        Place("the self-play's page", self_play.get_absolute_url(), ("self-play-log",)),
        Place("the validated revision's page", validated.get_absolute_url(), ("validation-log",)),
        Place("the refused revision's page", refused.get_absolute_url(), ("validation-report",)),
        Place("the evaluation's page", evaluation.get_absolute_url(), ("evaluation-log",)),
        Place(
            "the validation evaluation's page",
            validation.get_absolute_url(),
            ("validation-evaluation-log",),
        ),
        Place(
            "the evaluation's conversations",
            reverse("evaluation_conversations", args=[talked.pk]),
            ("evaluation-conversation",),
        ),
        Place("the API's duel", f"{api}/duels/{duel.pk}", ("duel-log",), api=True),
        Place("the API's replay", f"{replay}/replay", ("move",), api=True),
        Place("the API's conversations", f"{replay}/conversations", ("conversation",), api=True),
        Place(
            "the API's match conversations.jsonl",
            f"{replay}/conversations.jsonl",
            ("conversation",),
            api=True,
        ),
        Place(
            "the API's duel conversations.jsonl",
            f"{api}/duels/{duel.pk}/conversations.jsonl",
            ("conversation",),
            api=True,
        ),
        Place("the API's self-play", f"{api}/duels/{self_play.pk}", ("self-play-log",), api=True),
        Place(
            "the API's validated revision",
            f"{revisions}/{validated.version}",
            ("validation-log",),
            api=True,
        ),
        Place(
            "the API's refused revision",
            f"{revisions}/{refused.version}",
            ("validation-report",),
            api=True,
        ),
        Place("the API's revisions", revisions, ("validation-report",), api=True),
        # Where they, their duels and evaluations show, without a log.
        *(Place(f"the page of {c.name}", c.get_absolute_url()) for c in competitors),
        *(
            Place(
                f"the API's {c.name}", f"{api}/competitors/{c.environment.name}/{c.name}", api=True
            )
            for c in competitors
        ),
        *(
            Place(f"the API's LLM player {c.name}", f"{api}/llm/players/{c.pk}", api=True)
            for c in players
        ),
        Place("the LLM player's evaluation page", talked.get_absolute_url()),
        *(
            Place(f"episode 1 of {e}", reverse("evaluation_episode", args=[e.pk, 0]))
            for e in evaluations
        ),
        *(Place(f"the API's {e}", f"{api}/evaluations/{e.pk}", api=True) for e in evaluations),
        Place("the score competition's page", competition.get_absolute_url()),
        Place(
            "the API's score competition", f"{api}/score-competitions/{competition.pk}", api=True
        ),
        Place("the tournament's page", duel.tournament.get_absolute_url()),
        Place("the API's duels", f"{api}/duels", api=True),
        Place("the API's matches", f"{api}/duels/{duel.pk}/matches", api=True),
        Place("the API's match", replay, api=True),
        Place("the LLM players' statistics", reverse("llm_index")),
        Place("the model's statistics", reverse("llm_model", args=["rule-based"])),
        Place("the API's model statistics", f"{api}/llm/models/rule-based", api=True),
    ]


Visit = Callable[[Place], str]


@pytest.fixture
def visit(bearer: Bearer, carol: User, alice: User, organizer: User) -> Callable[[str], Visit]:
    """``visit(visitor)(place)``: the body the visitor gets there (a page through a session
    of theirs, an API operation with a token of theirs)."""
    users = {ATTENDEE: carol, OWNER: alice, ORGANIZER: organizer}

    def visitor(name: str) -> Visit:
        site, api = Client(), Client()
        headers: dict[str, Any] = {}
        if name in users:
            site.force_login(users[name])
            headers = bearer(users[name])

        def get(place: Place) -> str:
            if place.api:
                return api.get(place.path, **headers).content.decode()
            return site.get(place.path).content.decode()

        return get

    return visitor


@pytest.mark.parametrize("visitor", VISITORS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_each_place_shows_an_agents_log_exactly_to_whom_the_rule_lets_read_it(
    case: Case, visitor: str, places: list[Place], visit: Callable[[str], Visit]
) -> None:
    get = visit(visitor)
    may_read = visitor in case.readers

    wrong = {}
    for place in places:
        shown = sorted(set(PLANTED.findall(get(place))))
        expected = sorted(place.shows) if may_read else []
        if shown != expected:
            wrong[f"{place.what} ({place.path})"] = f"shows {shown}, not {expected}"

    assert wrong == {}, f"{visitor}, {'a reader' if may_read else 'not a reader'}"
