"""The API, version 1: ``/api/v1/``."""

from __future__ import annotations

from ninja import NinjaAPI, Swagger

from api import environments, errors, online
from api.throttles import AnonymousThrottle, TokenThrottle

api = NinjaAPI(
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
