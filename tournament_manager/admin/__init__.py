"""The organizers' admin of environments (and their leaderboards), tournaments, duels,
matches, ratings and score competitions (see ``core.admin``)."""

from tournament_manager.admin import competitions, environments, ratings, scores

__all__ = ["competitions", "environments", "ratings", "scores"]
