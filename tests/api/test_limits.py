"""Request bodies: an upload may be as large as the site allows; every other body is
small. (Uploads over the cap: ``test_submissions``.)"""

from __future__ import annotations

import json

import pytest
from ninja import NinjaAPI

from api import errors
from api.limits import limit_request_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def echo():
    """An API with one JSON operation, limited as ``/api/v1/`` is: its view."""
    api = NinjaAPI(urls_namespace="limits-test", docs_url=None, openapi_url=None)
    errors.install(api)
    api.add_decorator(limit_request_body, mode="view")

    @api.post("/echo")
    def echo(request, words: list[str]) -> list[str]:
        return words

    [pattern] = [pattern for pattern in api.urls[0] if pattern.name == "echo"]
    return pattern.callback


def test_it_refuses_any_other_body_over_the_small_limit_without_reading_it(rf, settings, echo):
    settings.ARENA_API_MAX_BODY_BYTES = 100
    small = rf.post("/echo", json.dumps(["a"] * 10), content_type="application/json")
    large = rf.post("/echo", json.dumps(["a"] * 50), content_type="application/json")

    accepted = echo(small)
    refused = echo(large)

    assert accepted.status_code == 200
    assert refused.status_code == 413
    assert json.loads(refused.content)["error"] == {
        "code": "too_large",
        "message": "The request body is 250 bytes; at most 100 are allowed here.",
        "details": [],
    }
    assert not hasattr(large, "_body")  # never read


def test_a_malformed_multipart_body_is_a_400_not_a_server_error(client, alice, bearer):
    response = client.post(
        "/api/v1/submissions",
        data=b"--boundary\r\nnot a part",
        content_type="multipart/form-data",  # no boundary: the parts cannot be found
        **bearer(alice, "submit"),
    )

    assert response.status_code == 400
    assert json.loads(response.content)["error"] == {
        "code": "bad_request",
        "message": "The request body cannot be read: Invalid boundary in multipart: None",
        "details": [],
    }
