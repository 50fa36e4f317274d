from django.apps import AppConfig


class BuilderConfig(AppConfig):
    name = "builder"
    verbose_name = "Builder"

    def ready(self) -> None:
        from builder import receivers  # noqa: F401  (connects them)
