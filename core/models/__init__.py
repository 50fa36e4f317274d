"""Arena's shared data model; every app reads and writes these tables through services."""

from core.models.accounts import ApiToken, InviteCode, Role, TokenScope, User
from core.models.competitions import Competition, CompetitionPhase, PhasePlays
from core.models.jobs import Job, JobKind, JobStatus
from core.models.llm import LLMPlayer, MatchConversation
from core.models.online import OnlineSeat
from core.models.ratings import (
    LeaderboardEntry,
    LeaderboardPoint,
    RatedPairing,
    Rating,
    RatingChange,
)
from core.models.scores import Evaluation, ScoreCompetition
from core.models.submissions import (
    Competitor,
    CompetitorKind,
    DisabledBy,
    Environment,
    Revision,
    StepStatus,
    UploadContent,
)
from core.models.teams import Team, TeamInvitation, TeamMember
from core.models.tournaments import (
    Duel,
    DuelResult,
    DuelSeat,
    DuelStatus,
    LiveEvent,
    Match,
    MatchLog,
    Participant,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)

__all__ = [
    "ApiToken",
    "Competition",
    "CompetitionPhase",
    "Competitor",
    "CompetitorKind",
    "DisabledBy",
    "Duel",
    "DuelResult",
    "DuelSeat",
    "DuelStatus",
    "Environment",
    "Evaluation",
    "InviteCode",
    "Job",
    "JobKind",
    "JobStatus",
    "LLMPlayer",
    "LeaderboardEntry",
    "LeaderboardPoint",
    "LiveEvent",
    "Match",
    "MatchConversation",
    "MatchLog",
    "OnlineSeat",
    "Participant",
    "PhasePlays",
    "RatedPairing",
    "Rating",
    "RatingChange",
    "Revision",
    "Role",
    "ScoreCompetition",
    "StepStatus",
    "Team",
    "TeamInvitation",
    "TeamMember",
    "TokenScope",
    "Tournament",
    "TournamentFormat",
    "TournamentStatus",
    "UploadContent",
    "User",
]
