"""The organizers' admin of tournaments, duels, matches and ratings (see ``core.admin``)."""

from tournament_manager.admin import competitions, ratings, scores

__all__ = ["competitions", "ratings", "scores"]
