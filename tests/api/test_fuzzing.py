"""The API against its own OpenAPI document, with requests schemathesis generates from it
(valid and invalid ones), anonymously and with tokens (alice's user token, holding every
scope, on the operations of ``TokenAuth``; her online model's token on those of
``ModelTokenAuth``): no answer is a server error, and every answer is one the document
describes (status code, content type, body schema). schemathesis's default checks run,
among them that a request without a token or with a broken one is refused where the
document says a token is needed.

Every operation is called over HTTP on a real network gateway (``manage.py run_gateway``:
uvicorn, ``edge.asgi``'s body limits, online play's own endpoints, Django under ASGI, a
real Redis seat bus and rate store), the way clients reach it, on the test database
(PostgreSQL) with the stories' rows in it, an LLM player's conversation, an evaluation,
and alice's online model in a duel with a request open, so that its stream and its long
poll have events to give. Streams end after a second (``ARENA_ONLINE_STREAM_SECONDS``)
and long polls wait half a second at most, so that every request has an end.

A fixed, derandomized number of random examples per operation keeps the run short and
the same on every machine: 50 with tokens through the gateway, the deep search (25 for
the stream and the long poll); 20 anonymously (the refusals and the public's view of the
same views); 10 through the WSGI handler (the other transport of the same views).
``ARENA_FUZZ_EXAMPLES=500`` searches deeper, 500 for each. Beside them, the boundary
cases schemathesis derives from the document (every parameter missing, empty, at and
beyond its limits, of the wrong type: about 2,000 requests, the same whatever the
transport) go anonymously through the gateway, and with tokens through the transport
that serves the operation in production: the WSGI handler (gunicorn's) for the site's
API, the gateway for online play. (Sent with tokens through both, they doubled the
fuzzing's cost for the same cases on the same views.)

This module: anonymously through the gateway, and with tokens through Django's WSGI
handler; ``test_fuzzing_tokens.py``: with tokens through the gateway, and real rows.
"""

from __future__ import annotations

import pytest
import schemathesis

from tests.support.fuzzing import ONLINE_PLAY

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

anonymous = schemathesis.pytest.from_fixture("anonymous_schema")
# Online play is the gateway's (nginx sends /api/v1/online/ to it), and fuzzed there. (A
# lazy schema's own filters are the ones its tests use, not those of its fixture's schema.)
through_wsgi = schemathesis.pytest.from_fixture("wsgi_schema").exclude(tag=ONLINE_PLAY)


@anonymous.parametrize()
def test_it_answers_every_anonymous_request_as_its_document_says(case):
    case.call_and_validate()


@through_wsgi.parametrize()
def test_django_alone_answers_every_request_with_tokens_as_its_document_says(case):
    case.call_and_validate()
