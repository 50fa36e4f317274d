"""The OpenAPI document and the documentation page: every operation and its errors are
documented, and the page works from Arena's own files (no CDN)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

import ninja.main
import pytest

from api.v1 import api

pytestmark = pytest.mark.django_db(transaction=True)

ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorOut"}
#: Online play's per-move endpoints, served by the network gateway in front of Django.
GATEWAY_OPERATIONS = ("online_events", "online_reply")


def document(client) -> dict:
    return json.loads(client.get("/api/v1/openapi.json").content)


def operations(client) -> list[tuple[str, str, dict]]:
    return [
        (path, method, operation)
        for path, methods in document(client)["paths"].items()
        for method, operation in methods.items()
    ]


def test_it_documents_every_operation_with_its_success_and_error_schemas(client):
    found = operations(client)

    assert {path for path, _, _ in found} >= {
        "/api/v1/competitors",
        "/api/v1/competitors/{environment}/{name}/revisions/{version}",
        "/api/v1/competitors/{environment}/{name}/ratings",
        "/api/v1/tournaments/{tournament_id}",
        "/api/v1/duels/{duel_id}/matches/{index}/replay",
        "/api/v1/submissions",
        "/api/v1/submissions/{submission_id}",
        "/api/v1/competitions",
        "/api/v1/competitions/{slug}",
        "/api/v1/competitions/{slug}/join",
        "/api/v1/competitors/{environment}/{name}/revisions/{version}/final",
    }
    for path, method, operation in found:
        responses = operation["responses"]
        success = [code for code in responses if code.startswith("2")]
        assert success, f"{method} {path}"
        content = responses[success[0]]["content"]
        if operation.get("operationId") == "online_events" or path.endswith(".jsonl"):
            # Online play's stream, LLM conversations' downloads: newline-delimited JSON.
            assert set(content) == {"application/x-ndjson"}
        else:
            assert "$ref" in content["application/json"]["schema"], f"{method} {path}"
        if operation.get("operationId") in GATEWAY_OPERATIONS:
            # Served in front of Django: nothing there answers 422 (a bad reply is a 400).
            errors = {"400", "401", "403", "429"}
        else:
            errors = {"401", "403", "422", "429"} | ({"404"} if "{" in path else set())
        for code in errors:
            assert responses[code]["content"]["application/json"]["schema"] == ERROR_SCHEMA, (
                f"{method} {path} {code}"
            )


def test_every_list_is_paginated_the_same_way(client):
    for path, _method, operation in operations(client):
        schema = operation["responses"].get("200", {}).get("content", {})
        reference = schema.get("application/json", {}).get("schema", {}).get("$ref", "")
        if not reference.split("/")[-1].startswith("Paged"):
            continue
        parameters = {parameter["name"]: parameter for parameter in operation["parameters"]}
        assert parameters["limit"]["schema"]["maximum"] == 100, path
        assert parameters["offset"]["schema"]["minimum"] == 0, path
    paged = document(client)["components"]["schemas"]["PagedDuelOut"]
    assert set(paged["properties"]) == {"count", "next", "previous", "items"}


def test_an_unknown_api_path_is_a_404_in_the_error_shape(client):
    response = client.get("/api/v1/chess/openings")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content)["error"]["code"] == "not_found"


def test_it_points_readers_to_the_documentation_this_site_serves(client):
    found = document(client)

    assert "/docs/api/" in found["info"]["description"]
    schemes = found["components"]["securitySchemes"].values()
    assert all("See /docs/api/." in scheme.get("description", "") for scheme in schemes)


def test_the_docs_page_refers_to_no_other_host(client):
    page = client.get("/api/v1/docs").content.decode()

    references = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert references
    assert all(not urlsplit(reference).netloc for reference in references), references
    found = re.search(r'id="swagger-settings">(.*?)</script>', page, re.S)
    assert found, page
    settings = json.loads(found[1])
    # Swagger UI would otherwise load its validator badge from validator.swagger.io.
    assert settings["validatorUrl"] is None


def test_the_docs_page_works_in_a_browser_with_only_arenas_own_files(live_server, page):
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))

    page.goto(f"{live_server.url}/api/v1/docs")
    page.locator(".opblock-summary-path", has_text="/api/v1/submissions").first.wait_for()

    assert page.locator(".opblock").count() >= 17
    assert requested
    assert all(url.startswith(live_server.url) for url in requested), requested
    assert any(url.endswith("swagger-ui-bundle.js") for url in requested)


def test_the_document_says_reads_need_no_token_and_submissions_and_play_do(client):
    for path, method, operation in operations(client):
        token: dict[str, list[str]] = {"TokenAuth": []}
        if path.startswith("/api/v1/online/models"):
            needed = [token]  # a user token with 'play' registers models
        elif path.startswith("/api/v1/online/"):
            needed = [{"ModelTokenAuth": []}]  # a model's own token plays it
        elif path.startswith("/api/v1/submissions"):
            needed = [token]
        elif path.startswith("/api/v1/llm/players") and method in ("post", "patch"):
            needed = [token]  # a user token with 'submit' registers and changes them
        elif path.startswith("/api/v1/competitors/") and method in (
            "patch",
            "delete",
            "post",
            "put",
        ):
            needed = [token]  # a user token with 'submit': settings, delete, test duels, finals
        elif path.startswith("/api/v1/competitions/") and method != "get":
            needed = [token]  # a user token with 'submit': one's team, invitations, joining
        elif path.endswith("/entries") or path.endswith("/entries/{name}"):
            needed = [token]  # a user token with 'submit' enters one's agents
        else:
            needed = [token, {}]
        assert operation["security"] == needed, f"{method} {path}"


def test_it_builds_the_document_once_and_serves_it_from_memory(client, monkeypatch):
    # As in a new process: nothing built yet.
    monkeypatch.setattr(api, "openapi_documents", {}, raising=False)
    builds: list[str] = []
    build = ninja.main.get_schema

    def counted(**arguments: Any) -> Any:
        builds.append(arguments["path_prefix"])
        return build(**arguments)

    monkeypatch.setattr(ninja.main, "get_schema", counted)

    first = client.get("/api/v1/openapi.json")
    second = client.get("/api/v1/openapi.json")

    assert first.status_code == second.status_code == 200
    assert json.loads(first.content) == json.loads(second.content)
    assert "/api/v1/tournaments/{tournament_id}" in json.loads(second.content)["paths"]
    assert builds == ["/api/v1/"]


def test_an_operations_docstring_is_its_summary_and_description(client):
    paths = document(client)["paths"]

    registering = paths["/api/v1/llm/players"]["post"]
    assert registering["summary"] == "Register an LLM player"
    # One line: the docstring's line breaks are the source's, not the text's.
    assert registering["description"] == (
        "A competitor whose moves a model chooses, prompted by Arena's harness through its "
        "OpenAI-compatible server. It plays in ladders and tournaments like any agent; "
        "nothing is uploaded, built or self-played."
    )
    # A docstring of one line is a summary alone.
    assert "description" not in paths["/api/v1/llm/players/{player_id}"]["get"]


def test_an_operation_without_a_docstring_is_refused_when_it_is_added():
    from api.auth import ArenaRouter, read

    router = ArenaRouter(tags=["tests"], auth=read)

    with pytest.raises(TypeError, match="docstring"):

        @router.get("/anything")
        def anything(request):
            return {}
