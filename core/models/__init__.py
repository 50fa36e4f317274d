"""Arena's shared data model; every app reads and writes these tables through services."""

from core.models.accounts import ApiToken, InviteCode, Role, User
from core.models.competitions import (
    Duel,
    DuelResult,
    DuelStatus,
    Match,
    Participant,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from core.models.ratings import Rating, RatingChange
from core.models.submissions import Competitor, Environment, Revision, StepStatus

__all__ = [
    "ApiToken",
    "Competitor",
    "Duel",
    "DuelResult",
    "DuelStatus",
    "Environment",
    "InviteCode",
    "Match",
    "Participant",
    "Rating",
    "RatingChange",
    "Revision",
    "Role",
    "StepStatus",
    "Tournament",
    "TournamentFormat",
    "TournamentStatus",
    "User",
]
