"""The documentation site, served by Arena itself at ``/docs/``: the pages of ``docs/``
built by mkdocs (``make docs-site``; the demo and ``scripts/build_images.sh`` build it)
into ``ARENA_DOCS_ROOT``. A page's folder URL serves its ``index.html``, as mkdocs links
them. Without a built site, a page says how to build it."""

from __future__ import annotations

import mimetypes
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils._os import safe_join
from django.views.decorators.http import require_GET


@require_GET
def docs(request: HttpRequest, path: str = "") -> HttpResponseBase:
    root = Path(settings.ARENA_DOCS_ROOT)
    if not (root / "index.html").is_file():
        return render(request, "web/docs_missing.html", status=404)
    try:
        found = Path(safe_join(root, path))
    except Exception as error:  # SuspiciousFileOperation: a path out of the site
        raise Http404("No such page") from error
    if found.is_dir():
        found = found / "index.html"
    if not found.is_file():
        raise Http404("No such page in the documentation")
    content_type, encoding = mimetypes.guess_type(found.name)
    response = FileResponse(found.open("rb"), content_type=content_type or "text/plain")
    if encoding:
        response.headers["Content-Encoding"] = encoding
    return response
