from django.apps import AppConfig


class TournamentManagerConfig(AppConfig):
    name = "tournament_manager"
    verbose_name = "Tournament manager"

    def ready(self) -> None:
        from tournament_manager import receivers  # noqa: F401  (connects them)
