"""Teams of a competition: formed, invited to, joined, left (``core.models.teams``).

The rules, as on Kaggle:

- a person is in one team per competition; one who uploads alone becomes a team of one,
  named after them, with no step of their own (``team_for``);
- a member invites by link (whoever has its code) or by e-mail address (only that person
  may accept); a team holds ``Competition.team_size_limit`` members at most;
- a person whose team has submitted (any upload of its agents) stays in it: they may not
  leave it, nor join another team; a team that has not submitted may be left, and one
  left empty is removed;
- nobody joins a team after the deadline, nor a disqualified team.
"""

from __future__ import annotations

import logging
from smtplib import SMTPException

from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import ArenaError
from core.models import Competition, Revision, Team, TeamInvitation, TeamMember, User
from core.models.teams import hash_invitation

logger = logging.getLogger(__name__)


def team_of(*, user: User, competition: Competition) -> Team | None:
    membership = (
        TeamMember.objects.filter(competition=competition, user=user).select_related("team").first()
    )
    return membership.team if membership else None


def team_has_submitted(team: Team) -> bool:
    return Revision.objects.filter(competitor__team=team).exists()


def team_create(*, competition: Competition, user: User, name: str) -> Team:
    """A new team of ``competition`` with ``user`` as its first member."""
    name = name.strip()
    if not name:
        raise ArenaError("a team needs a name")
    _joinable(competition)
    current = team_of(user=user, competition=competition)
    if current is not None:
        raise ArenaError(
            f"you are in team {current.name} in {competition.title}: leave it first"
            + (" (you cannot: it has submitted)" if team_has_submitted(current) else "")
        )
    try:
        with transaction.atomic():
            team = Team.objects.create(competition=competition, name=name, created_by=user)
            TeamMember.objects.create(team=team, competition=competition, user=user)
    except IntegrityError as error:
        if Team.objects.filter(competition=competition, name=name).exists():
            raise ArenaError(
                f"a team named {name!r} exists already; choose another name"
            ) from error
        raise ArenaError(f"you are in a team in {competition.title} already") from error
    return team


def team_for(*, user: User, competition: Competition) -> Team:
    """The user's team, or a team of one made for them (named after them) on their first
    upload to the competition."""
    current = team_of(user=user, competition=competition)
    if current is not None:
        return current
    base = user.display_name or user.email.split("@")[0]
    name, number = base, 1
    while Team.objects.filter(competition=competition, name=name).exists():
        number += 1
        name = f"{base} ({number})"
    return team_create(competition=competition, user=user, name=name)


def team_rename(*, team: Team, user: User, name: str) -> None:
    _member(team, user)
    name = name.strip()
    if not name:
        raise ArenaError("a team needs a name")
    if Team.objects.filter(competition=team.competition_id, name=name).exclude(pk=team.pk).exists():
        raise ArenaError(f"a team named {name!r} exists already; choose another name")
    Team.objects.filter(pk=team.pk).update(name=name)
    team.name = name


def invitation_create(
    *, team: Team, by: User, email: str = "", page_url: str = ""
) -> tuple[TeamInvitation, str]:
    """An invitation to the team, by link (no ``email``) or for one address; returns it
    with its code, shown once (only its hash is kept). One for an address is mailed to
    it, pointing to the competition's page (``page_url``), where that person accepts it
    signed in with that address: the mail holds no code."""
    _member(team, by)
    _joinable(team.competition, team)
    email = email.strip().lower()
    if email and TeamMember.objects.filter(team=team, user__email=email).exists():
        raise ArenaError(f"{email} is in the team already")
    code = TeamInvitation.new_code()
    invitation = TeamInvitation.objects.create(
        team=team,
        email=email,
        code_hash=hash_invitation(code),
        created_by=by,
        expires_at=timezone.now() + TeamInvitation.default_expiry(),
    )
    if email:
        _invitation_mailed(invitation, page_url)
    return invitation, code


def _invitation_mailed(invitation: TeamInvitation, page_url: str) -> None:
    """The invitation told to its address; a mail server that refuses it loses nothing:
    the invitation waits on the competition's page all the same."""
    team = invitation.team
    competition = team.competition
    inviter = invitation.created_by
    lines = [
        f"{inviter or 'A member'} invites you to team {team.name} in {competition.title}.",
        "",
        f"Sign in (or sign up) with this address, {invitation.email}, and accept it on the "
        f"competition's page{': ' + page_url if page_url else ''}.",
        f"It is valid until {invitation.expires_at:%Y-%m-%d %H:%M} UTC.",
    ]
    try:
        send_mail(
            f"An invitation to team {team.name} ({competition.title})",
            "\n".join(lines),
            None,
            [invitation.email],
        )
    except (OSError, SMTPException):
        logger.warning("the invitation to %s could not be mailed", team, exc_info=True)


def invitation_revoke(*, invitation: TeamInvitation, by: User) -> None:
    _member(invitation.team, by)
    TeamInvitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(
        revoked_at=timezone.now()
    )


def invitation_find(code: str) -> TeamInvitation:
    """The open invitation of that code; one used, revoked, expired or unknown is refused
    with the same words (a code's existence never leaks)."""
    invitation = (
        TeamInvitation.objects.filter(code_hash=hash_invitation(code.strip()))
        .select_related("team__competition")
        .first()
    )
    if invitation is None or not invitation.is_open():
        raise ArenaError("this invitation is not valid: it was used, revoked or has expired")
    return invitation


def invitation_accept(*, invitation: TeamInvitation, user: User) -> Team:
    """``user`` joins the invitation's team, leaving their own team of the competition if
    it has not submitted."""
    team = invitation.team
    competition = team.competition
    if invitation.email and invitation.email != user.email.lower():
        raise ArenaError(
            f"this invitation is for {invitation.email}: sign in with that address to accept it"
        )
    with transaction.atomic():
        # The team's row held: two acceptances at once cannot both take its last place.
        locked = Team.objects.select_for_update().get(pk=team.pk)
        _joinable(competition, locked)
        current = team_of(user=user, competition=competition)
        if current is not None and current.pk == team.pk:
            raise ArenaError(f"you are in team {team.name} already")
        if current is not None:
            if team_has_submitted(current):
                raise ArenaError(
                    f"you have submitted in team {current.name}: you cannot join another "
                    f"team in {competition.title}"
                )
            _leave(current, user)
        used = TeamInvitation.objects.filter(
            pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True
        ).update(accepted_at=timezone.now(), accepted_by=user)
        if not used:
            raise ArenaError("this invitation is not valid: it was used, revoked or has expired")
        TeamMember.objects.create(team=locked, competition=competition, user=user)
    return locked


def team_leave(*, team: Team, user: User) -> None:
    """``user`` leaves the team; refused once it has submitted. A team left empty goes."""
    _member(team, user)
    if team_has_submitted(team):
        raise ArenaError(
            f"team {team.name} has submitted: its members stay in it until the competition ends"
        )
    with transaction.atomic():
        _leave(team, user)


def _leave(team: Team, user: User) -> None:
    TeamMember.objects.filter(team=team, user=user).delete()
    if not team.memberships.exists() and not team.competitors.exists():
        team.delete()


def _member(team: Team, user: User) -> None:
    if not TeamMember.objects.filter(team=team, user=user).exists():
        raise ArenaError(f"you are not in team {team.name}")


def _joinable(competition: Competition, team: Team | None = None) -> None:
    """Refuse joining (or inviting to) a team once the deadline is past, a disqualified
    team, or a full one."""
    deadline = competition.deadline
    if deadline is not None and timezone.now() >= deadline:
        raise ArenaError(f"teams of {competition.title} are closed: its deadline has passed")
    if team is None:
        return
    if team.is_disqualified:
        raise ArenaError(f"team {team.name} is disqualified")
    if team.memberships.count() >= competition.team_size_limit:
        raise ArenaError(
            f"team {team.name} is full: {competition.title} allows "
            f"{competition.team_size_limit} member(s) per team"
        )
