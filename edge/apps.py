from django.apps import AppConfig


class EdgeConfig(AppConfig):
    name = "edge"
    verbose_name = "Network edge"
