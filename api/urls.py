from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path, re_path

from api.errors import error_body
from api.v1 import api


def no_such_endpoint(request: HttpRequest, rest: str) -> HttpResponse:
    """Any other path under /api/v1/: a 404 in the API's shape, not the site's page."""
    return JsonResponse(
        error_body("not_found", f"No API endpoint at {request.path}; see /api/v1/docs."),
        status=404,
    )


# Any character: a path with a newline (%0A) is an unknown endpoint too, not the site's page.
urlpatterns = [
    path("", api.urls),
    re_path(r"^(?P<rest>[\s\S]*)$", no_such_endpoint),
]
