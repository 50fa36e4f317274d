"""The browser's seat in a game, under ``/api/v1/online/human/`` (session and CSRF, not
API tokens): Django views, mounted before the API's own routes."""

from __future__ import annotations

from django.urls import path

from edge.human import human_abort, human_events, human_reply, human_resign

urlpatterns = [
    path("online/human/<int:pk>/events", human_events, name="human_events"),
    path("online/human/<int:pk>/reply", human_reply, name="human_reply"),
    path("online/human/<int:pk>/resign", human_resign, name="human_resign"),
    path("online/human/<int:pk>/abort", human_abort, name="human_abort"),
]
