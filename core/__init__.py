"""The Django project; importing it loads the Celery app so ``@shared_task`` binds to it."""

from core.celery import app as celery_app

__all__ = ["celery_app"]
