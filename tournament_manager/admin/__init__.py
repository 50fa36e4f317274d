"""The organizers' admin of environments (and their leaderboards), tournaments, duels,
matches, ratings and score competitions (see ``core.admin``)."""

from tournament_manager.admin import duels, environments, ratings, scores, tournaments

__all__ = ["duels", "environments", "ratings", "scores", "tournaments"]
