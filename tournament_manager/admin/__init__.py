"""The organizers' admin of environments (and their leaderboards), tournaments, duels,
matches, ratings, score competitions, and competitions with their teams (see ``core.admin``)."""

from tournament_manager.admin import (
    competitions,
    duels,
    environments,
    ratings,
    scores,
    tournaments,
)

__all__ = ["competitions", "duels", "environments", "ratings", "scores", "tournaments"]
