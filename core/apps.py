from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Arena"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from core.page_cache import watch_connection

        # Every write to the pages' tables makes the cached pages stale (core.page_cache).
        connection_created.connect(watch_connection, dispatch_uid="arena-page-cache")
