"""The documentation site, served by Arena itself at ``/docs/``: the pages of ``docs/``
built by mkdocs (``make docs-site``; the demo and ``scripts/build_images.sh`` build it)
into ``ARENA_DOCS_ROOT``, by Django's own file view (``django.views.static.serve``, which
keeps every path inside the folder). A page's folder URL serves its ``index.html``, as
mkdocs links them. Without a built site, a page says how to build it."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.static import serve


@require_GET
def docs(request: HttpRequest, path: str = "") -> HttpResponseBase:
    root = Path(settings.ARENA_DOCS_ROOT)
    if not (root / "index.html").is_file():
        response: HttpResponse = render(request, "web/docs_missing.html", status=404)
        return response
    if path == "" or path.endswith("/"):
        path += "index.html"
    try:
        return serve(request, path, document_root=str(root))
    except SuspiciousFileOperation as error:  # a path out of the site: no such page
        raise Http404("No such page in the documentation") from error
