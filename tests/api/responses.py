"""Reading the API's answers in tests."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse


def body(response: HttpResponse) -> Any:
    return json.loads(response.content)


def ok(response: HttpResponse) -> Any:
    """The body of a 200 answer (else the test fails, showing the body)."""
    assert response.status_code == 200, response.content
    return body(response)
