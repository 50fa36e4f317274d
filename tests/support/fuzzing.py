"""The fuzzed world of the API's fuzz tests (``tests/api/test_fuzzing*.py``): the rows,
tokens and gateway they call, and schemathesis's configuration. Two test modules, so that
two test processes fuzz at once: anonymously and through Django's WSGI handler in one,
with tokens through the gateway and on real rows in the other. A pytest plugin (the root
``conftest.py``), so that both modules have its fixtures."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest
import schemathesis
from django.utils import timezone
from schemathesis.config import SchemathesisConfig

from core.models import Competition, CompetitionPhase, Duel, Tournament, User
from core.services.accounts import api_token_create
from core.services.online import online_model_register
from core.services.teams import team_create
from sandboxes.redis_seat_bus import RedisSeatBus
from tests.factories import (
    EnvironmentFactory,
    EvaluationFactory,
    LLMPlayerFactory,
    MatchConversationFactory,
    TournamentFactory,
)
from tests.support.gateway import GATEWAY_SETTINGS, Gateway, gateway_started
from tests.support.workers import Workers

EXAMPLES = os.environ.get("ARENA_FUZZ_EXAMPLES")
#: With tokens through the gateway: the deep search of every operation's parameters.
EXAMPLES_PER_OPERATION = int(EXAMPLES or 50)
#: Anonymously: the refusals and the public's view. The same parameters are searched with
#: tokens, through the same views.
ANONYMOUS_EXAMPLES = int(EXAMPLES or 20)
#: With tokens through Django's WSGI handler: that the other transport answers as
#: documented too; the views and their parameters are the gateway run's.
WSGI_EXAMPLES = int(EXAMPLES or 10)
#: The tag of the operations only the gateway serves (nginx sends /api/v1/online/ to it).
ONLINE_PLAY = "online play"
#: Online play's two reads of events, the stream and the long poll, hold their answer
#: open (a second, half of one) whenever a request gets through: fewer examples keep the
#: run short.
EVENTS_OPERATIONS = ("online_events", "api_online_events_next")
EVENTS_EXAMPLES = int(EXAMPLES or 25)

FUZZED_GATEWAY = {
    **GATEWAY_SETTINGS,
    "ARENA_ONLINE_STREAM_SECONDS": "1",
    "ARENA_ONLINE_POLL_SECONDS": "0.5",
    # Every generated request must reach its operation, not the rate limit.
    "ARENA_ONLINE_RATE": "100000/s",
    "ARENA_API_TOKEN_RATE": "1000000/min",
    "ARENA_API_ANONYMOUS_RATE": "1000000/min",
}


@dataclasses.dataclass(frozen=True)
class FuzzedWorld:
    """The gateway, the tokens it is fuzzed with, and the rows of the story."""

    gateway: Gateway
    #: Alice's, with every scope: reads, uploads and deletions, her online models.
    user_token: str
    #: Her online model's, which plays it.
    model_token: str
    #: The path parameters of one real row for each read (GET) of the document.
    reads: dict[str, dict[str, Any]]


@pytest.fixture
def world(
    celery_workers: Workers,
    redis_url: str,
    settings: Any,
    alice: User,
    tournament: Tournament,
    duel: Duel,
    validation_duel: Duel,
    ratings: object,
    leaderboard: object,
) -> FuzzedWorld:
    """The story world, committed (the gateway is another process), so that some
    generated requests find real rows; alice's tokens; a gateway in front of it all."""
    llm_match = MatchConversationFactory(
        match__duel__revisions=[LLMPlayerFactory().competitor.revisions.get(), None]
    ).match
    evaluation = EvaluationFactory(finished=True)
    _, user_token = api_token_create(user=alice, name="fuzzing", scopes=["read", "submit", "play"])
    environment = EnvironmentFactory(name="connect_four")
    TournamentFactory(environment=environment, format="ladder", status="running")
    model, model_token = online_model_register(
        owner=alice, environment=environment, name="alices-model"
    )
    cup = Competition.objects.create(
        environment=tournament.environment, slug="fuzzed-cup", title="Fuzzed cup"
    )
    CompetitionPhase.objects.create(competition=cup, name="development", starts_at=timezone.now())
    team_create(competition=cup, user=alice, name="Alice's team")
    gateway = gateway_started(celery_workers, redis_url, settings, **FUZZED_GATEWAY)
    bus = RedisSeatBus(redis_url)
    bus.seat_open(model.seat, duel=1, announcement=b'{"type":"duel","duel":1}')
    bus.publish(model.seat, b'{"type":"act","id":7,"match":0}', awaits="act:7")

    competitor = {"environment": "tic_tac_toe", "name": "alices-bot"}
    match = {"duel_id": duel.pk, "index": 0}
    llm_match_path = {"duel_id": llm_match.duel_id, "index": llm_match.index}
    reads: dict[str, dict[str, Any]] = {
        "/api/v1/environments": {},
        "/api/v1/environments/{name}": {"name": "tic_tac_toe"},
        "/api/v1/leaderboard/{name}": {"name": "tic_tac_toe"},
        "/api/v1/competitors": {},
        "/api/v1/competitors/{environment}/{name}": competitor,
        "/api/v1/competitors/{environment}/{name}/revisions": competitor,
        "/api/v1/competitors/{environment}/{name}/revisions/{version}": {
            **competitor,
            "version": 1,
        },
        "/api/v1/competitors/{environment}/{name}/ratings": competitor,
        "/api/v1/tournaments": {},
        "/api/v1/tournaments/{tournament_id}": {"tournament_id": tournament.pk},
        "/api/v1/duels": {},
        "/api/v1/duels/{duel_id}": {"duel_id": validation_duel.pk},
        "/api/v1/duels/{duel_id}/matches": {"duel_id": duel.pk},
        "/api/v1/duels/{duel_id}/matches/{index}": match,
        "/api/v1/duels/{duel_id}/matches/{index}/replay": match,
        "/api/v1/submissions": {},
        "/api/v1/submissions/{submission_id}": {"submission_id": duel.revisions()[0].pk},
        "/api/v1/online/models": {},
        "/api/v1/online/status": {},
        "/api/v1/online/next": {},
        "/api/v1/online/events": {},
        "/api/v1/llm/players": {},
        "/api/v1/llm/players/{player_id}": {
            "player_id": llm_match.duel.revisions()[0].competitor_id
        },
        "/api/v1/llm/models/{model}": {"model": "rule-based"},
        "/api/v1/duels/{duel_id}/matches/{index}/conversations": llm_match_path,
        "/api/v1/duels/{duel_id}/matches/{index}/conversations.jsonl": llm_match_path,
        "/api/v1/duels/{duel_id}/conversations.jsonl": {"duel_id": llm_match.duel_id},
        "/api/v1/score-competitions": {},
        "/api/v1/score-competitions/{competition_id}": {
            "competition_id": evaluation.competition_id
        },
        "/api/v1/evaluations/{evaluation_id}": {"evaluation_id": evaluation.pk},
        "/api/v1/competitions": {},
        "/api/v1/competitions/{slug}": {"slug": cup.slug},
    }
    return FuzzedWorld(gateway, user_token, model_token, reads)


def fuzzing_config(
    *, tokens: FuzzedWorld | None, examples: int, boundaries_of: str | None = None
) -> SchemathesisConfig:
    """With ``tokens``, every request sends the token of the operation's security scheme
    (and none is generated); without, the requests are anonymous, or carry the random
    tokens schemathesis makes up. ``examples`` per operation (fewer for the two reads of
    events, at most ``EVENTS_EXAMPLES``), generated at random; and the boundary cases
    schemathesis derives from each operation's document (its coverage phase: every
    parameter missing, empty, at and beyond its limits, of the wrong type), for every
    operation, or with ``boundaries_of`` a tag, for the operations of that tag only."""
    auth = (
        {
            "TokenAuth": {"bearer": tokens.user_token},
            "ModelTokenAuth": {"bearer": tokens.model_token},
        }
        if tokens
        else None
    )
    return SchemathesisConfig.from_dict(
        {
            # The document's security schemes, so that schemathesis also checks that a
            # request without the token, or with a broken one, is refused.
            **({"auth": {"openapi": auth}} if auth else {}),
            "generation": {
                "max-examples": examples,
                "deterministic": True,
                "with-security-parameters": auth is None,
                # Unknown query parameters are ignored, as documented, not refused.
                "allow-extra-parameters": False,
            },
            **({"phases": {"coverage": {"enabled": False}}} if boundaries_of is not None else {}),
            "operations": [
                *(
                    [{"include-tag": boundaries_of, "phases": {"coverage": {"enabled": True}}}]
                    if boundaries_of is not None
                    else []
                ),
                *(
                    {
                        "include-operation-id": operation,
                        "generation": {"max-examples": min(examples, EVENTS_EXAMPLES)},
                        # A seq's pattern allows 20 digits; a pattern cannot say that each
                        # number fits in 64 bits (as its description does): one beyond is
                        # refused with 400, as documented.
                        "checks": {
                            "positive_data_acceptance": {
                                "expected-statuses": ["2xx", "400", "401", "403", "429"]
                            }
                        },
                    }
                    for operation in EVENTS_OPERATIONS
                ),
                {
                    # An upload's file is checked beyond what a schema can say (a .py or a
                    # .zip with an entry point, within the caps): a schema-valid upload may
                    # still be refused, with 400, 413 or 422, and nothing stored.
                    "include-operation-id": "api_submissions_submission_create",
                    "checks": {
                        "positive_data_acceptance": {
                            "expected-statuses": ["2xx", "400", "401", "403", "404", "413", "422"]
                        }
                    },
                },
                *(
                    # A base URL is checked beyond its pattern (a valid host name), and a
                    # player's name may be taken: refused with 400 or 422, nothing stored.
                    {
                        "include-operation-id": operation,
                        "checks": {
                            "positive_data_acceptance": {
                                "expected-statuses": ["2xx", "400", "401", "403", "404", "422"]
                            }
                        },
                    }
                    for operation in ("api_llm_llm_player_create", "api_llm_llm_player_change")
                ),
                {
                    # A competitor with nothing to validate again (not paused, not an LLM
                    # player whose validation failed) is refused with 400, as documented.
                    "include-operation-id": "api_competitors_revalidation_start",
                    "checks": {
                        "positive_data_acceptance": {
                            "expected-statuses": ["2xx", "400", "401", "403", "404"]
                        }
                    },
                },
                {
                    # A well-formed reply the referee is not waiting for (most generated
                    # ones: another id, a second answer) is refused with 409, as documented.
                    "include-operation-id": "online_reply",
                    "checks": {
                        "positive_data_acceptance": {
                            "expected-statuses": ["202", "401", "403", "409", "429"]
                        }
                    },
                },
            ],
        }
    )


@schemathesis.hook
def filter_query(context: object, query: dict[str, object] | None) -> bool:
    """Leave out a case with an empty list or an object for a query parameter. A query
    string can say neither: an empty list goes as no parameter at all, and an object is
    written differently by each transport (as an empty value over HTTP, as its Python
    text, ``{}``, through the WSGI handler, a valid string), so schemathesis would count
    as "accepted" a negative case the API never saw. An empty value (``?model=``) is
    still sent, and refused where the document says so."""
    return not query or all(value != [] and not isinstance(value, dict) for value in query.values())


def served_document(world: FuzzedWorld, *, with_tokens: bool) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(
        f"{world.gateway.url}/api/v1/openapi.json",
        config=fuzzing_config(
            tokens=world if with_tokens else None,
            examples=EXAMPLES_PER_OPERATION if with_tokens else ANONYMOUS_EXAMPLES,
            # With tokens, the boundary cases of the operations production serves through
            # gunicorn go through the WSGI handler (``wsgi_schema``); the gateway's own
            # (online play) here.
            boundaries_of=ONLINE_PLAY if with_tokens else None,
        ),
    )


@pytest.fixture
def anonymous_schema(world: FuzzedWorld) -> schemathesis.BaseSchema:
    return served_document(world, with_tokens=False)


@pytest.fixture
def token_schema(world: FuzzedWorld) -> schemathesis.BaseSchema:
    """As alice: her user token, with every scope (uploads and deletions included), and
    her online model's token on online play's operations."""
    return served_document(world, with_tokens=True)


@pytest.fixture
def wsgi_schema(world: FuzzedWorld, settings: Any) -> schemathesis.BaseSchema:
    """As alice, through Django's WSGI handler in this process: how gunicorn serves the
    API in production, beside the gateway, which has online play."""
    # Imported here: making the WSGI handler sets Django up, which a plugin must not do
    # while it loads.
    from core.wsgi import application

    settings.ARENA_API_TOKEN_RATE = FUZZED_GATEWAY["ARENA_API_TOKEN_RATE"]
    settings.ARENA_API_ANONYMOUS_RATE = FUZZED_GATEWAY["ARENA_API_ANONYMOUS_RATE"]
    return schemathesis.openapi.from_wsgi(
        "/api/v1/openapi.json",
        application,
        config=fuzzing_config(tokens=world, examples=WSGI_EXAMPLES),
    )
