"""The API, version 1: ``/api/v1/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ninja import NinjaAPI, Swagger

from api import (
    competitions,
    competitors,
    duels,
    environments,
    errors,
    llm,
    online,
    online_docs,
    scores,
    submissions,
    tournaments,
)
from api.limits import limit_request_body


class OwnFilesSwagger(Swagger):
    """Swagger UI from the files ninja ships, which the site serves as its own static files
    (``NINJA_FILES`` in the settings), never from a CDN. ninja renders that template only
    when it is an installed app, which would import it in every process; otherwise it
    renders the template named here, on the site's template engine: the same one."""

    template_cdn = str(Path(Swagger.template_cdn).with_name("swagger.html"))


class ArenaAPI(NinjaAPI):
    """The API, whose document also describes online play's per-move endpoints, served
    by ``edge.gateway`` in front of Django.

    Its OpenAPI document is built once per process (and path prefix), on its first
    request, then served from memory: building it reads every operation's schemas, 0.8 to
    1.7 s, and the operations do not change while the process runs. Callers read the
    document and never change it."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        #: The OpenAPI document of each path prefix asked for (``build_openapi_document``).
        self.openapi_documents: dict[str, dict[str, Any]] = {}

    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None
    ) -> Any:
        if path_prefix is None:
            path_prefix = self.get_root_path(path_params or {})
        document = self.openapi_documents.get(path_prefix)
        if document is None:
            # Two first requests at once may both build it: the same document, either kept.
            document = self.build_openapi_document(path_prefix)
            self.openapi_documents[path_prefix] = document
        return document

    def build_openapi_document(self, path_prefix: str) -> dict[str, Any]:
        """The OpenAPI document, built anew: ninja's, with online play's endpoints."""
        schema = super().get_openapi_schema(path_prefix=path_prefix)
        schema["paths"].update(online_docs.openapi_paths())
        schema["components"]["schemas"].update(online_docs.OPENAPI_SCHEMAS)
        return schema


api = ArenaAPI(
    title="Arena API",
    version="1",
    description=(
        "Environments, leaderboards, competitors, tournaments, competitions and teams, duels "
        "and replays, as on the site; uploads of your agents; online play. Send an API token "
        "(create one on your profile page) as `Authorization: Bearer <token>`; reads also "
        "work without one, for what is public. An online model's model token plays that "
        "model alone. Each operation says who may call it in `x-arena-access`; the rules, "
        "rates and limits are in the documentation this site serves at /docs/api/ "
        "(docs/api.md in Arena's "
        'repository). Every error is `{"error": {"code", "message", "details"}}`. '
        "Lists take `limit` (at most 100) and `offset`, and answer "
        '`{"count", "next", "previous", "items"}`.'
    ),
    urls_namespace="api-v1",
    openapi_url="/openapi.json",
    docs_url="/docs",
    # No validator badge, which Swagger UI would load from validator.swagger.io.
    docs=OwnFilesSwagger(settings={"persistAuthorization": True, "validatorUrl": None}),
)
errors.install(api)
api.add_decorator(limit_request_body, mode="view")
api.add_router("", environments.router)
api.add_router("", competitors.router)
api.add_router("", tournaments.router)
api.add_router("", competitions.router)
api.add_router("", duels.router)
api.add_router("", submissions.router)
api.add_router("/online", online.router)
api.add_router("", llm.router)
api.add_router("", scores.router)
