"""Who may see what. Every refusal is a 404, so a private object's existence never leaks.

The rules:

- a public competitor's pages and code are open to everyone; a private one's only to its
  owner and the organizers (its name still shows on leaderboards and standings);
- a tournament, and its duels and replays, are open to everyone when the tournament is
  public, to the organizers otherwise; a score competition and its evaluations likewise;
- a validation duel or evaluation (self-play) follows its revision;
- an agent's log, wherever it shows (``can_see_logs``: a duel's whole log, what it logged
  at each move of the replays, an evaluation's log, its validation's log and report, an LLM
  player's conversations), is its owner's and the organizers'; everyone's once the duel or
  evaluation is over, if the competitor is public and its owner shares its logs
  (``Competitor.share_logs``, off by default).
"""

from __future__ import annotations

from typing import Union

from django.contrib.auth.models import AnonymousUser
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from core.models import (
    ApiToken,
    Competitor,
    Duel,
    DuelSeat,
    Environment,
    Evaluation,
    Match,
    Revision,
    ScoreCompetition,
    Tournament,
    User,
)
from core.models.submissions import managers

#: Whoever makes the request: ``request.user``.
Visitor = Union[User, AnonymousUser]  # noqa: UP007 (a runtime alias, not an annotation)


class AuthenticatedHttpRequest(HttpRequest):
    """The request of a view behind ``login_required``, or of a REST operation whose token
    must be a user's (the ``submit`` and ``models`` scopes): its user is signed in. A type
    for the checker only (django-stubs' recipe); the decorator or the operation's
    authentication is what makes it true."""

    user: User


def is_organizer(user: Visitor) -> bool:
    return isinstance(user, User) and user.is_active and user.is_organizer


def can_see_competitor(user: Visitor, competitor: Competitor) -> bool:
    """Its pages and its revisions' code; its agents' logs are ``can_see_logs``'s."""
    if competitor.is_public or is_organizer(user):
        return True
    return is_owner(user, competitor)


def can_see_logs(user: Visitor, competitor: Competitor, *, finished: bool) -> bool:
    """What its agent wrote in a duel or an evaluation (whose page the visitor may already
    see), ``finished`` once that is over: the whole log, what it logged at each move, an
    LLM player's conversations, its validation's log and report. Its owner's and the
    organizers'; everyone's once it is over, if the competitor is public and its owner
    shares its logs (a public competitor's code is anyone's; its logs only by that choice)."""
    if is_owner(user, competitor) or is_organizer(user):
        return True
    return finished and competitor.is_public and competitor.share_logs


def is_owner(user: Visitor, competitor: Competitor) -> bool:
    """Its owner, or a member of its team (``Competitor.is_managed_by``)."""
    return isinstance(user, User) and competitor.is_managed_by(user)


def can_see_tournament(user: Visitor, tournament: Tournament) -> bool:
    return tournament.is_public or is_organizer(user)


def can_see_score_competition(user: Visitor, competition: ScoreCompetition) -> bool:
    return competition.is_public or is_organizer(user)


def can_see_evaluation(user: Visitor, evaluation: Evaluation) -> bool:
    """With its competition; a validation evaluation (no competition) with its competitor,
    as a validation duel."""
    if evaluation.competition is not None:
        return can_see_score_competition(user, evaluation.competition)
    return can_see_competitor(user, evaluation.revision.competitor)


# The same rules as filters, for lists: each returns the condition ``can_see_...`` checks
# one row for, on the rows reached through ``path`` ("" for the model itself, else a
# relation such as "revision__competitor").


def _field(path: str, name: str) -> str:
    return f"{path}__{name}" if path else name


def competitors_visible(user: Visitor, path: str = "") -> Q:
    if is_organizer(user):
        return Q()
    public = Q(**{_field(path, "is_public"): True})
    if isinstance(user, User):
        return public | managers(user, path)
    return public


def tournaments_visible(user: Visitor, path: str = "") -> Q:
    if is_organizer(user):
        return Q()
    return Q(**{_field(path, "is_public"): True})


def score_competitions_visible(user: Visitor) -> Q:
    return Q() if is_organizer(user) else Q(is_public=True)


def duels_visible(user: Visitor) -> Q:
    if is_organizer(user):
        return Q()
    in_tournament = Q(tournament__isnull=False) & tournaments_visible(user, "tournament")
    # Outside a tournament, visible when no seat's competitor is hidden.
    hidden_seat = DuelSeat.objects.filter(duel=OuterRef("pk")).exclude(
        competitors_visible(user, "revision__competitor")
    )
    outside = Q(tournament__isnull=True) & Q(~Exists(hidden_seat))
    return in_tournament | outside


def can_see_duel(user: Visitor, duel: Duel) -> bool:
    if duel.tournament is not None:
        return can_see_tournament(user, duel.tournament)
    # A validation duel (or any duel outside a tournament) shows its agents' moves: it is
    # visible only to whoever may see both of them.
    return all(can_see_competitor(user, revision.competitor) for revision in duel.revisions())


def get_environment(name: str) -> Environment:
    return get_object_or_404(Environment, name=name)


def get_competitor_for_user(user: Visitor, environment_name: str, name: str) -> Competitor:
    competitor = get_object_or_404(
        # Its leaderboard entry too: its page shows it, at the cost of a join.
        # A person's seat in the browser has no page: the person is shown by name.
        Competitor.objects.listed().select_related(
            "environment", "owner", "leaderboard_entry__revision"
        ),
        environment__name=environment_name,
        name=name,
    )
    if not can_see_competitor(user, competitor):
        raise Http404("No such competitor")
    return competitor


def get_own_competitor(user: Visitor, environment_name: str, name: str) -> Competitor:
    """The competitor, only for its owner (who uploads its revisions)."""
    competitor = get_competitor_for_user(user, environment_name, name)
    if not is_owner(user, competitor):
        raise Http404("No such competitor")
    return competitor


def get_revision_for_user(
    user: Visitor, environment_name: str, competitor_name: str, version: int
) -> Revision:
    revision = get_object_or_404(
        Revision.objects.select_related("competitor__environment", "competitor__owner"),
        competitor__environment__name=environment_name,
        competitor__name=competitor_name,
        version=version,
    )
    if not can_see_competitor(user, revision.competitor):
        raise Http404("No such revision")
    return revision


def get_own_revision(user: Visitor, pk: int) -> Revision:
    """One of the user's own revisions (or their team's), by id; anyone else's is a 404."""
    if not isinstance(user, User):
        raise Http404("No such revision")
    return get_object_or_404(
        Revision.objects.select_related("competitor__environment", "competitor__owner").filter(
            managers(user, "competitor")
        ),
        pk=pk,
    )


def get_tournament_for_user(user: Visitor, pk: int) -> Tournament:
    tournament = get_object_or_404(Tournament.objects.select_related("environment"), pk=pk)
    if not can_see_tournament(user, tournament):
        raise Http404("No such tournament")
    return tournament


def _duels() -> QuerySet[Duel]:
    return Duel.objects.with_seats().select_related("tournament__environment", "job")


def get_duel_for_user(user: Visitor, pk: int) -> Duel:
    duel = get_object_or_404(_duels(), pk=pk)
    if not can_see_duel(user, duel):
        raise Http404("No such duel")
    return duel


def get_match_for_user(user: Visitor, duel_pk: int, index: int) -> Match:
    duel = get_duel_for_user(user, duel_pk)
    match = get_object_or_404(Match, duel=duel, index=index)
    match.duel = duel
    return match


def get_own_token(user: Visitor, pk: int) -> ApiToken:
    """One of the user's active API tokens; another user's is a 404."""
    if not isinstance(user, User):
        raise Http404("No such token")
    return get_object_or_404(ApiToken, pk=pk, user=user, revoked_at__isnull=True)
