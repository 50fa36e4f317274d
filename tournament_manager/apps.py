from django.apps import AppConfig


class TournamentManagerConfig(AppConfig):
    name = "tournament_manager"
    verbose_name = "Tournament manager"
