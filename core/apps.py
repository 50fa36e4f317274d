from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Arena"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.core import checks
        from django.db.backends.signals import connection_created

        # The Celery app, so that the apps' tasks (``@shared_task``) bind to it wherever
        # they are sent from (a worker's ``celery -A core`` finds it by itself). Not in
        # ``core/__init__.py``: the containers' healthchecks (``python -m
        # core.healthcheck``, no Django) would import Celery each time, 0.3 s of CPU.
        import core.celery  # noqa: F401
        from core.page_cache import watch_connection
        from core.private_data import data_files, data_folders, keep_private
        from core.services.confinement import check_confinement

        # Before anything is written: the database, uploads, logs, the broker and caches
        # are this user's alone, and an older instance's are put right (core.private_data).
        keep_private(data_folders(), files=data_files(), create=settings.VAR_DIR)

        # Says at start when agents cannot be confined here (core.services.confinement).
        checks.register(check_confinement)
        # Every write to the pages' tables makes the cached pages stale (core.page_cache).
        connection_created.connect(watch_connection, dispatch_uid="arena-page-cache")
