"""What a tournament's and a duel's pages read: standings, crosstable, duels, players and
matches, in one call per page."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from django.core.paginator import Page
from django.db.models import F, QuerySet
from django.urls import reverse

from core.models import (
    Competitor,
    Duel,
    DuelResult,
    DuelSeat,
    DuelStatus,
    Match,
    Participant,
    Revision,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from reads.access import (
    Visitor,
    can_see_competitor,
    can_see_logs,
)
from reads.outcomes import DuelOutcome, duel_outcome
from reads.pages import DUEL_ROWS, STANDING_ROWS, rows_page
from reads.replays import (
    FaultNote,
    first_mover_label,
    game_of,
    match_faults,
    match_result_text,
    player_labels,
    result_text,
)
from referee.results import ranks_from_scores
from tournament_manager.selectors import (
    TournamentProgress,
    tournament_progress,
)


@dataclasses.dataclass(frozen=True)
class StandingRow:
    participant: Participant
    competitor: Competitor
    linked: bool


@dataclasses.dataclass(frozen=True)
class DuelRow:
    duel: Duel
    label_1: str
    #: Player 2, or in a game of more than two every player after the first.
    label_2: str
    result_text: str
    #: Every player's total score, player 1's first.
    scores: list[float]
    #: Its badge: what happened to its players (a fault, a validation failed), not only
    #: its job's status.
    outcome: DuelOutcome
    #: On an agent's page: its first matches, each with that agent's result, linking
    #: their replays (``competitor_match_marks``), and how many more the duel has.
    marks: tuple[MatchMark, ...] = ()
    more_matches: int = 0


@dataclasses.dataclass(frozen=True)
class MatchMark:
    """One match of a duel from one player's side: "W" won, "D" drawn (or tied first),
    "L" lost, "-" not scored (an error of no player)."""

    url: str
    index: int
    mark: str

    @property
    def style(self) -> str:
        return {"W": "good", "L": "bad"}.get(self.mark, "muted")

    @property
    def words(self) -> str:
        said = {"W": "won", "D": "drawn", "L": "lost"}.get(self.mark, "not scored")
        return f"Match {self.index + 1}: {said}"


#: Matches marked on each duel of an agent's page; the duel's page lists them all.
MATCH_MARKS = 10


def competitor_match_marks(rows: list[DuelRow], competitor_id: int) -> list[DuelRow]:
    """``rows`` with each played duel's first ``MATCH_MARKS`` matches marked from the side
    of the competitor ``competitor_id`` (its duels' seats prefetched). One query."""
    seat_of = {
        row.duel.pk: seat.number
        for row in rows
        for seat in row.duel.players()
        if seat.revision.competitor_id == competitor_id
    }
    found: dict[int, list[MatchMark]] = {}
    counts: dict[int, int] = {}
    matches = Match.objects.filter(
        duel_id__in=[row.duel.pk for row in rows if row.duel.status == DuelStatus.SUCCEEDED]
    ).values_list("duel_id", "index", "scores", "result")
    for duel_id, index, scores, result in matches.order_by("duel_id", "index"):
        counts[duel_id] = counts.get(duel_id, 0) + 1
        marks = found.setdefault(duel_id, [])
        if len(marks) < MATCH_MARKS and duel_id in seat_of:
            mark = _mark(scores, seat_of[duel_id] - 1, result)
            url = reverse("match", args=[duel_id, index])
            marks.append(MatchMark(url, index, mark))
    return [
        dataclasses.replace(
            row,
            marks=tuple(found.get(row.duel.pk, ())),
            more_matches=max(counts.get(row.duel.pk, 0) - MATCH_MARKS, 0),
        )
        for row in rows
    ]


def _mark(scores: list[float], own: int, result: str) -> str:
    if result == DuelResult.ERROR or own >= len(scores) or len(scores) < 2:
        return "-"
    ranks = ranks_from_scores(scores)
    if ranks[own] > 1:
        return "L"
    return "D" if ranks.count(1) > 1 else "W"


def duel_row(duel: Duel) -> DuelRow:
    labels = player_labels(duel)
    players = duel.players()
    return DuelRow(
        duel,
        labels[1],
        ", ".join(labels[number] for number in range(2, duel.num_players + 1)),
        _duel_result_text(duel, labels, players),
        [player.score for player in players],
        duel_outcome(duel, labels=labels, seats=players),
    )


@dataclasses.dataclass(frozen=True)
class CrossCell:
    """One duel in a crosstable, from its row's player's side."""

    duel: Duel
    #: "won", "lost", "drawn", or "" while it is not over.
    outcome: str
    #: Matches won by the row's player and by the column's.
    wins: int
    losses: int


@dataclasses.dataclass(frozen=True)
class CrossRow:
    standing: StandingRow
    #: One per column, in the rows' order; None on the diagonal or for a pair with no duel.
    cells: list[CrossCell | None]


#: A round robin shows its crosstable up to this many participants (a wider one does not
#: fit a page: its duels are listed below it all the same).
CROSSTABLE_MOST = 20


def _crosstable(user: Visitor, tournament: Tournament) -> list[CrossRow]:
    """Every participant against every other, best first: a round robin of two-player
    duels with at most ``CROSSTABLE_MOST`` participants; otherwise none. Three queries."""
    if tournament.format != TournamentFormat.ROUND_ROBIN or tournament.environment.players != 2:
        return []
    participants = list(_participants(tournament)[: CROSSTABLE_MOST + 1])
    if not 2 <= len(participants) <= CROSSTABLE_MOST:
        return []
    order = {participant.revision_id: index for index, participant in enumerate(participants)}
    grid: list[list[CrossCell | None]] = [[None] * len(participants) for _ in participants]
    for duel in tournament.duels.with_seats():
        one, two = duel.players()
        if one.revision_id not in order or two.revision_id not in order:
            continue
        for mine, theirs in ((one, two), (two, one)):
            outcome = ""
            if duel.status == DuelStatus.SUCCEEDED and duel.result:
                outcome = (
                    "drawn"
                    if (mine.rank or 0) == (theirs.rank or 0)
                    else "won"
                    if (mine.rank or 0) < (theirs.rank or 0)
                    else "lost"
                )
            grid[order[mine.revision_id]][order[theirs.revision_id]] = CrossCell(
                duel, outcome, mine.wins, theirs.wins
            )
    standings = _standing_rows(user=user, participants=participants)
    return [CrossRow(standing, cells) for standing, cells in zip(standings, grid, strict=True)]


@dataclasses.dataclass(frozen=True)
class TournamentPage:
    tournament: Tournament
    #: A page of ``StandingRow``, best first.
    standings: Page
    #: A page of ``DuelRow``, the latest first.
    duels: Page
    #: Its duels by status, and the time its remaining ones take.
    progress: TournamentProgress
    #: A round robin's crosstable (``_crosstable``); empty for other formats.
    crosstable: list[CrossRow] = dataclasses.field(default_factory=list)

    @property
    def is_running(self) -> bool:
        return self.tournament.status == TournamentStatus.RUNNING

    @property
    def shows_buchholz(self) -> bool:
        """Swiss standings break ties on points by Buchholz; other formats have none."""
        return self.tournament.format == TournamentFormat.SWISS

    # A ladder has no number of duels to reach (it pairs until stopped): its page shows
    # counts, never a share of a total.
    @property
    def done_percent(self) -> int:
        """Duels played, of all it plays: failed ones are not played (``failed_percent``)."""
        return _percent(self.tournament.duels_done, self.tournament.duels_total)

    @property
    def failed_percent(self) -> int:
        return _percent(self.tournament.duels_failed, self.tournament.duels_total)

    @property
    def minutes_left(self) -> int | None:
        return self.progress.minutes_left

    @property
    def no_duels_text(self) -> str:
        """What its list of duels says while it has none."""
        if not self.tournament.is_ladder:
            return "The duels are scheduled when the tournament starts."
        if self.tournament.status == TournamentStatus.DRAFT:
            return "No duel yet: the ladder pairs its entries once it starts."
        if self.tournament.is_finished:
            return "The ladder played no duel."
        players = self.tournament.environment.players
        return f"No duel yet: the ladder pairs its entries as soon as {players} of them can play."


def _percent(part: int, total: int) -> int:
    """``part`` of ``total`` in whole percent, rounded down (100 only once all are
    there), and 1 at least for any part."""
    if not total or not part:
        return 0
    return max(1, 100 * part // total)


def _participants(tournament: Tournament) -> QuerySet[Participant]:
    """Best first; the withdrawn last. A ladder's rank is its fit's (``standings_compute``)
    and its duel points rank nothing: an entry not ranked yet comes after the ranked ones
    by name, not by its points."""
    points = () if tournament.is_ladder else ("-points",)
    return tournament.participants.select_related(
        "revision__competitor__owner", "revision__competitor__environment"
    ).order_by(
        "withdrawn", F("rank").asc(nulls_last=True), *points, "revision__competitor__name", "pk"
    )


def _standing_rows(*, user: Visitor, participants: Iterable[Participant]) -> list[StandingRow]:
    """Private competitors' names show, unlinked."""
    return [
        StandingRow(
            participant=participant,
            competitor=participant.revision.competitor,
            linked=can_see_competitor(user, participant.revision.competitor),
        )
        for participant in participants
    ]


def tournament_standings(*, user: Visitor, tournament: Tournament) -> list[StandingRow]:
    """Every participant, best first; the withdrawn last."""
    return _standing_rows(user=user, participants=_participants(tournament))


def tournament_page(
    *,
    user: Visitor,
    tournament: Tournament,
    standings_page: str | None = None,
    duels_page: str | None = None,
) -> TournamentPage:
    standings = rows_page(_participants(tournament), standings_page, STANDING_ROWS)
    standings.object_list = _standing_rows(user=user, participants=standings.object_list)
    # A ladder's newest duels first (what its readers come for); rounds in order otherwise.
    order = ("-pk",) if tournament.format == TournamentFormat.LADDER else ("round", "pk")
    duels = rows_page(tournament.duels.with_seats().order_by(*order), duels_page, DUEL_ROWS)
    duels.object_list = [duel_row(duel) for duel in duels.object_list]
    return TournamentPage(
        tournament=tournament,
        standings=standings,
        duels=duels,
        progress=tournament_progress(tournament),
        crosstable=_crosstable(user, tournament),
    )


@dataclasses.dataclass(frozen=True)
class SeatView:
    number: int
    label: str
    revision: Revision
    linked: bool
    wins: int
    score: float
    errors: int
    restarts: int
    #: None when the visitor may not read it.
    log: str | None
    #: 1 for the best total score (shared by equal ones); None until the duel is scored.
    rank: int | None = None


@dataclasses.dataclass(frozen=True)
class MatchRow:
    match: Match
    first_label: str
    result_text: str
    faults: list[FaultNote]


@dataclasses.dataclass(frozen=True)
class DuelPage:
    duel: Duel
    players: list[SeatView]
    matches: list[MatchRow]
    result_text: str
    #: Its badge and the sentence beside it (``reads.outcomes``).
    outcome: DuelOutcome
    #: Times a worker took its job up; None for a validation duel, which has no job of its
    #: own (its revision's validation played it).
    attempts: int | None

    @property
    def is_pending(self) -> bool:
        return not self.duel.is_finished

    @property
    def has_llm_seat(self) -> bool:
        return any(player.revision.competitor.is_llm for player in self.players)

    @property
    def duration(self) -> float | None:
        return self.duel.played.seconds


def _duel_result_text(
    duel: Duel, labels: dict[int, str], players: Sequence[DuelSeat] | None = None
) -> str:
    ranks = [player.rank or 0 for player in players] if players else None
    return result_text(duel.result, labels, ranks) or duel.get_status_display()


def duel_players(*, user: Visitor, duel: Duel) -> list[SeatView]:
    """Every player, player 1 first; an agent's log only for whoever may read its logs
    (``can_see_logs``)."""
    labels = player_labels(duel)
    players = []
    for player in duel.players():
        competitor = player.revision.competitor
        visible = can_see_competitor(user, competitor)
        readable = can_see_logs(user, competitor, finished=duel.is_finished)
        players.append(
            SeatView(
                number=player.number,
                label=labels[player.number],
                revision=player.revision,
                # A person in the browser has no competitor page: shown by name only.
                linked=visible and not competitor.is_human,
                wins=player.wins,
                score=player.score,
                errors=player.errors,
                restarts=player.restarts,
                log=player.log if readable else None,
                rank=player.rank,
            )
        )
    return players


def duel_page(*, user: Visitor, duel: Duel) -> DuelPage:
    labels = player_labels(duel)
    game = game_of(duel)  # one copy of the game, reset for each match's first mover
    matches = list(duel.matches.order_by("index"))
    seats = duel.players()
    job = getattr(duel, "job", None)  # none for a validation duel
    return DuelPage(
        duel=duel,
        players=duel_players(user=user, duel=duel),
        matches=[
            MatchRow(
                match=match,
                first_label=first_mover_label(match, labels, game),
                result_text=match_result_text(match, labels),
                faults=match_faults(match, labels),
            )
            for match in matches
        ],
        result_text=_duel_result_text(duel, labels, seats),
        outcome=duel_outcome(duel, labels=labels, seats=seats, matches=matches),
        attempts=job.attempts if job is not None else None,
    )
