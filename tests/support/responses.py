"""Reading the site's and the API's answers in tests."""

from __future__ import annotations

import html
import json
from typing import Any

from django.http import HttpResponse


def body(response: HttpResponse) -> Any:
    """The API's answer, decoded from JSON."""
    return json.loads(response.content)


def ok(response: HttpResponse) -> Any:
    """The body of a 200 answer (else the test fails, showing the body)."""
    assert response.status_code == 200, response.content
    return body(response)


def text(response: HttpResponse) -> str:
    """A page as its reader sees the characters (entities unescaped), tags and all."""
    return html.unescape(response.content.decode())
