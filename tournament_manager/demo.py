"""The demo's world (``manage.py demo``, ``scripts/demo.sh``): who takes part, which
games it plays and how, and the reference players of ``example_players/`` that it
uploads (each ``.py`` file, and each folder zipped, the same bytes every run)."""

from __future__ import annotations

import io
import os
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.urls import NoReverseMatch, reverse

from core.models import (
    DuelStatus,
    Environment,
    LeaderboardEntry,
    Revision,
    ScoreCompetition,
    Tournament,
    TournamentStatus,
    User,
)
from core.services.revisions import Reuse
from referee.match_points import score_text
from tournament_manager.leaderboard import leaderboard_refit
from tournament_manager.selectors import latest_validated_revisions
from tournament_manager.services.tournaments import tournament_cancel

EXAMPLE_PLAYERS_DIR = Path(settings.BASE_DIR) / "example_players"
ORGANIZER_EMAIL = "demo-organizer@example.com"
ATTENDEE_EMAIL = "demo-attendee@example.com"
INVITE_CODE = "welcome"
TOURNAMENT_PREFIX = "Demo round robin"
#: A one-player game's demo: a score competition of its reference players.
SCORES_PREFIX = "Demo scores"
SCORES_EPISODES = 10
#: Online play in the demo: a ladder of this game, and a model the attendee connects.
ONLINE_GAME = "connect_four"
ONLINE_MODEL = "demo-online"
ONLINE_LADDER = "Demo online ladder"
#: LLM players in the demo: the same rule-based "model" (``llm.local_server``, which
#: ``scripts/demo.sh`` serves) at two temperatures, entered in this game's round robin.
LLM_GAME = "tic_tac_toe"
LLM_MODEL = "rule-based"
LLM_PLAYERS = (("llm-careful", 0.0), ("llm-bold", 1.2))
#: A fixed time stamp in the zips made from folders, so the same folder gives the same
#: bytes (and sha256) on every run.
ZIP_DATE = (2026, 1, 1, 0, 0, 0)
#: What an upload of a reference player is said to have done (none: uploaded now).
UPLOAD_NOTES: dict[Reuse, str] = {
    "created": "",
    "reused": "already uploaded",
    "requeued": "uploaded before, built and validated again",
}


@dataclass(frozen=True)
class ReferencePlayer:
    name: str
    filename: str
    content: bytes


def shown_path(path: Path) -> str:
    """``path`` relative to the project, as typed from its folder, where it is inside."""
    try:
        return str(path.relative_to(Path(settings.BASE_DIR)))
    except ValueError:
        return str(path)


def zip_folder(folder: Path) -> bytes:
    """The folder as a zip, in memory, keeping executable bits; same bytes every time."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            info = zipfile.ZipInfo(str(path.relative_to(folder)), date_time=ZIP_DATE)
            info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def reference_players(game: str) -> list[ReferencePlayer]:
    """``example_players/<game>/``: each .py file, and each folder (zipped) is a player."""
    players = []
    for path in sorted((EXAMPLE_PLAYERS_DIR / game).iterdir()):
        if path.name.startswith((".", "_")):
            continue
        if path.is_file() and path.suffix == ".py":
            players.append(ReferencePlayer(path.stem, path.name, path.read_bytes()))
        elif path.is_dir():
            players.append(ReferencePlayer(path.name, f"{path.name}.zip", zip_folder(path)))
    return players


def llm_server_answers(url: str) -> bool:
    """Whether the OpenAI-compatible server at ``url`` answers (its model list)."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/models", timeout=2) as answer:
            return answer.status == 200
    except (OSError, ValueError):
        return False


def unfinished_demo_tournaments_cancel(
    *, environment: Environment, organizer: User
) -> list[Tournament]:
    """Cancel the demo round robins an interrupted run left unfinished (they would never
    end); returns them."""
    stale = list(
        Tournament.objects.filter(
            environment=environment,
            created_by=organizer,
            name__startswith=TOURNAMENT_PREFIX,
            status__in=[TournamentStatus.DRAFT, TournamentStatus.RUNNING],
        )
    )
    for tournament in stale:
        tournament_cancel(tournament=tournament)
    return stale


def round_robin_entrants(environment: Environment) -> list[Revision]:
    """The demo round robin's players: each competitor's latest validated revision, but
    online agents' (they play when they connect)."""
    return [
        revision
        for revision in latest_validated_revisions(environment)
        if not revision.competitor.is_online
    ]


def login_path() -> str:
    """Where a visitor signs in: the site's page, else the admin's."""
    for name in ("login", "admin:login"):
        try:
            return reverse(name)
        except NoReverseMatch:
            continue
    return "/admin/"


def score_lines(competition: ScoreCompetition) -> list[str]:
    """The demo's table of a score competition: each agent's mean return and interval."""
    lines: list[str] = []
    evaluations = sorted(
        competition.evaluations.select_related("revision__competitor"),
        key=lambda evaluation: (
            evaluation.status != DuelStatus.SUCCEEDED,
            -(evaluation.mean_return or 0.0),
        ),
    )
    lines.append(f"  {'agent':<24} {'mean return':>12}  95 % interval")
    for evaluation in evaluations:
        name = evaluation.revision.competitor.name
        if evaluation.status != DuelStatus.SUCCEEDED or evaluation.mean_return is None:
            lines.append(f"  {name:<24} {evaluation.get_status_display().lower():>12}")
            continue
        interval = (
            f"{evaluation.ci_low:.1f} to {evaluation.ci_high:.1f}"
            if evaluation.ci_low is not None and evaluation.ci_high is not None
            else "-"
        )
        lines.append(f"  {name:<24} {evaluation.mean_return:>12.1f}  {interval}")
    lines.append(f"  leaderboard: {competition.get_absolute_url()}")
    return lines


def standings_lines(tournament: Tournament) -> list[str]:
    """The demo's table of a tournament's standings beside the leaderboard."""
    lines: list[str] = []
    participants = tournament.participants.select_related("revision__competitor__owner").order_by(
        "rank", "-points"
    )
    leaderboard_refit(environment=tournament.environment)
    entries = {
        entry.competitor_id: entry
        for entry in LeaderboardEntry.objects.filter(environment=tournament.environment)
    }
    lines.append(
        f"  {'rank':>4}  {'player':<22} {'owner':<16} {'points':>6}  {'W-D-L':<8} "
        f"{'score':>6}  leaderboard (Elo ± sd, rank range)"
    )
    for participant in participants:
        competitor = participant.revision.competitor
        entry = entries.get(competitor.pk)
        if entry is None:
            shown = "     —"
        elif entry.is_provisional:
            # Too few matches to rank: where it could rank says nothing yet.
            shown = f"{entry.score:6.0f} ± {entry.score_sd:3.0f}, provisional"
        else:
            shown = (
                f"{entry.score:6.0f} ± {entry.score_sd:3.0f}, {entry.rank_best}-{entry.rank_worst}"
            )
        record = f"{participant.wins}-{participant.draws}-{participant.losses}"
        lines.append(
            f"  {participant.rank or '':>4}  {participant.revision!s:<22} "
            f"{competitor.owner.display_name[:16]:<16} {participant.points:>6}  {record:<8} "
            f"{score_text(participant.score):>6}  {shown}"
        )
    return lines
