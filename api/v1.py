"""The API, version 1: ``/api/v1/``."""

from __future__ import annotations

from typing import Any

from ninja import NinjaAPI, Swagger

from api import environments, errors, gateway, online
from api.throttles import AnonymousThrottle, TokenThrottle


class ArenaAPI(NinjaAPI):
    """The API, whose document also describes online play's per-move endpoints, served
    by ``api.gateway`` in front of Django."""

    def get_openapi_schema(self, **options: Any) -> Any:
        schema = super().get_openapi_schema(**options)
        schema["paths"].update(gateway.openapi_paths(online.ReplyIn.model_json_schema()))
        return schema


api = ArenaAPI(
    title="Arena API",
    version="1",
    description=(
        "Environments, leaderboards, competitors, tournaments, duels and replays, as on the "
        "site. Send an API token (create one on your profile page) as "
        "`Authorization: Bearer <token>`; reads also work without one, for what is public. "
        'Every error is `{"error": {"code", "message", "details"}}`.'
    ),
    urls_namespace="api-v1",
    openapi_url="/openapi.json",
    docs_url="/docs",
    docs=Swagger(settings={"persistAuthorization": True}),
    throttle=[AnonymousThrottle(), TokenThrottle()],
)
errors.install(api)
api.add_router("", environments.router)
api.add_router("/online", online.router)
