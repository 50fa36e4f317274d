from django.apps import AppConfig


class DuelRunnerConfig(AppConfig):
    name = "duel_runner"
    verbose_name = "Duel runner"
