"""The organizers' admin of tournaments, duels, matches and ratings (see ``core.admin``)."""

from tournament_manager.admin import competitions, ratings

__all__ = ["competitions", "ratings"]
