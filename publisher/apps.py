from django.apps import AppConfig


class PublisherConfig(AppConfig):
    name = "publisher"
    verbose_name = "Publisher"

    def ready(self) -> None:
        from publisher import receivers  # noqa: F401  (connects them)
