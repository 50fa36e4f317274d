from __future__ import annotations

from django.urls import path

from api.v1 import api

urlpatterns = [path("", api.urls)]
