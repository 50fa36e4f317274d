"""The API against its own OpenAPI document, with requests schemathesis generates from it
(valid and invalid ones), anonymously and with a token: no answer is a server error, and
every answer is one the document describes (status code, content type, body schema).
schemathesis's default checks run, among them that a request without a token or with a
broken one is refused where the document says a token is needed. Run in process through
the WSGI application, on the test database (PostgreSQL), with the stories' rows in it.

A fixed, derandomized number of examples per operation keeps the run under a minute and
the same on every machine; ``ARENA_FUZZ_EXAMPLES=500`` searches deeper.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from schemathesis.config import SchemathesisConfig

from core.wsgi import application
from tests.factories import (
    ApiTokenFactory,
    EvaluationFactory,
    LLMPlayerFactory,
    MatchConversationFactory,
)

pytestmark = pytest.mark.django_db

EXAMPLES_PER_OPERATION = int(os.environ.get("ARENA_FUZZ_EXAMPLES", "50"))
#: Online play's per-move endpoints, served by the network gateway (``api.gateway``).
GATEWAY_OPERATIONS = ("online_events", "online_reply")
SECRET = "arena_fuzzing-token-of-alice-0123456789"


def fuzzing_config(*, token: str | None) -> SchemathesisConfig:
    """With ``token``, every request sends it (and none is generated); without, the
    requests are anonymous, or carry the random tokens schemathesis makes up."""
    return SchemathesisConfig.from_dict(
        {
            # The document's security scheme, so that schemathesis also checks that a
            # request without the token, or with a broken one, is refused.
            **({"auth": {"openapi": {"TokenAuth": {"bearer": token}}}} if token else {}),
            "generation": {
                "max-examples": EXAMPLES_PER_OPERATION,
                "deterministic": True,
                "with-security-parameters": token is None,
                # Unknown query parameters are ignored, as documented, not refused.
                "allow-extra-parameters": False,
            },
            "operations": [
                *(
                    # Served by the network gateway in front of Django, not by the WSGI
                    # application: fuzzed through a real gateway in test_online_fuzzing.
                    {"include-operation-id": operation, "enabled": False}
                    for operation in GATEWAY_OPERATIONS
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
            ],
        }
    )


@pytest.fixture
def connection_kept_between_requests() -> Iterator[None]:
    """The requests run in the test's transaction, on its connection, which Django would
    close at the end of each request; its own test client keeps it open the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def world(
    settings,
    connection_kept_between_requests,
    alice,
    tournament,
    duel,
    validation_duel,
    ratings,
    leaderboard,
) -> None:
    """The story world in the database, so that some generated requests find real rows,
    and alice's token. The rates are lifted, or most answers would be 429."""
    settings.ARENA_API_TOKEN_RATE = settings.ARENA_API_ANONYMOUS_RATE = "1000000/min"
    ApiTokenFactory(user=alice, secret=SECRET, scopes="read submit play")


@schemathesis.hook
def filter_query(context: object, query: dict[str, object] | None) -> bool:
    """Leave out a case with an empty list for a query parameter. A query string cannot
    say it (the request goes without the parameter), so schemathesis would count it as
    a negative case, an array where the document says a string, which the API
    "accepted", when the API only saw a request without that parameter. An empty value
    (``?model=``) is still sent, and refused where the document says so."""
    return not query or all(value != [] for value in query.values())


def served_document(token: str | None) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_wsgi(
        "/api/v1/openapi.json", application, config=fuzzing_config(token=token)
    )


@pytest.fixture
def anonymous_schema(world: None) -> schemathesis.BaseSchema:
    return served_document(token=None)


@pytest.fixture
def token_schema(world: None) -> schemathesis.BaseSchema:
    """As alice, with a token holding every scope (uploads and deletions included)."""
    return served_document(token=SECRET)


anonymous = schemathesis.pytest.from_fixture("anonymous_schema")
with_token = schemathesis.pytest.from_fixture("token_schema")


@anonymous.parametrize()
def test_it_answers_every_anonymous_request_as_its_document_says(case):
    case.call_and_validate()


@with_token.parametrize()
def test_it_answers_every_request_with_a_token_as_its_document_says(case):
    case.call_and_validate()


def test_it_answers_each_read_of_real_rows_as_its_document_says(
    token_schema, tournament, duel, validation_duel
):
    """Generated ids rarely hit a row: each read once more, on the story's rows."""
    llm_match = MatchConversationFactory(
        match__duel__revision_1=LLMPlayerFactory().competitor.revisions.get()
    ).match
    llm_match_path = {"duel_id": llm_match.duel_id, "index": llm_match.index}
    competitor = {"environment": "tic_tac_toe", "name": "alices-bot"}
    match = {"duel_id": duel.pk, "index": 0}
    evaluation = EvaluationFactory(finished=True)
    reads = {
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
        "/api/v1/submissions/{submission_id}": {"submission_id": duel.revision_1_id},
        "/api/v1/llm/players": {},
        "/api/v1/llm/players/{player_id}": {"player_id": llm_match.duel.revision_1.competitor_id},
        "/api/v1/llm/models/{model}": {"model": "rule-based"},
        "/api/v1/duels/{duel_id}/matches/{index}/conversations": llm_match_path,
        "/api/v1/duels/{duel_id}/matches/{index}/conversations.jsonl": llm_match_path,
        "/api/v1/duels/{duel_id}/conversations.jsonl": {"duel_id": llm_match.duel_id},
        "/api/v1/score-competitions": {},
        "/api/v1/score-competitions/{competition_id}": {
            "competition_id": evaluation.competition_id
        },
        "/api/v1/evaluations/{evaluation_id}": {"evaluation_id": evaluation.pk},
    }

    for path, parameters in reads.items():
        case = token_schema[path]["GET"].Case(path_parameters=parameters)
        response = case.call_and_validate(headers={"Authorization": f"Bearer {SECRET}"})
        assert response.status_code == 200, path
    # Online play's reads need a model token and a seat: fuzzed in test_online_fuzzing.
    documented = {
        path
        for path, methods in token_schema.raw_schema["paths"].items()
        if "get" in methods and not path.startswith("/api/v1/online/")
    }
    assert documented == set(reads)
