from __future__ import annotations

from django.conf import settings

from builder import tasks
from core.celery import app


def test_it_schedules_the_image_clean_up_as_a_registered_task():
    entry = settings.CELERY_BEAT_SCHEDULE["prune-revision-images"]

    assert entry["task"] in app.tasks
    assert entry["schedule"] == 3600


def test_it_leaves_images_alone_with_the_process_sandbox(settings, monkeypatch):
    settings.ARENA_SANDBOX = "process"
    asked: list[str] = []
    monkeypatch.setattr(tasks.services, "revision_images_prune", lambda: asked.append("prune"))
    monkeypatch.setattr(tasks, "wheel_cache_prune", lambda: asked.append("wheels"))

    tasks.prune_revision_images()

    assert asked == []
