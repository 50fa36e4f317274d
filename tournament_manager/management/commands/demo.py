from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse
from django.utils import timezone

from core.embedded_worker import EmbeddedWorker, site_worker
from core.errors import ArenaError
from core.models import (
    Competitor,
    Environment,
    InviteCode,
    MatchConversation,
    Revision,
    Role,
    ScoreCompetition,
    StepStatus,
    Tournament,
    TournamentStatus,
    User,
)
from core.services.accounts import (
    invite_code_get_or_create,
    random_password,
    user_create_or_reset,
)
from core.services.competitors import competitor_share_logs
from core.services.confinement import agents_confinement, upload_refusal
from core.services.environments import environments_import
from core.services.llm import llm_player_register, llm_player_update
from core.services.online import model_token_renew, online_model_register
from core.services.revisions import competitor_get_or_create, revision_create_or_reuse
from tournament_manager.demo import (
    ATTENDEE_EMAIL,
    EXAMPLE_PLAYERS_DIR,
    INVITE_CODE,
    LLM_GAME,
    LLM_MODEL,
    LLM_PLAYERS,
    ONLINE_GAME,
    ONLINE_LADDER,
    ONLINE_MODEL,
    ORGANIZER_EMAIL,
    SCORES_EPISODES,
    SCORES_PREFIX,
    TOURNAMENT_PREFIX,
    UPLOAD_NOTES,
    ReferencePlayer,
    llm_server_answers,
    login_path,
    reference_players,
    round_robin_entrants,
    score_lines,
    standings_lines,
    unfinished_demo_tournaments_cancel,
)
from tournament_manager.demo import (
    shown_path as _shown_path,
)
from tournament_manager.score_competitions import (
    score_competition_create,
    score_competition_start,
)
from tournament_manager.services.tournaments import (
    ladder_open,
    tournament_create,
    tournament_launch,
)


class Command(BaseCommand):
    help = (
        "The demo: import the games, make a demo organizer (new random password each run) "
        f"and attendee and the invite code {INVITE_CODE!r}, upload every reference player of "
        "example_players/ (built and validated by self-play), then play a round robin per "
        "game and print the standings. Safe to run again: identical uploads are skipped and "
        "a game with a completed tournament is not played again unless --fresh."
    )
    #: The embedded broker's worker, while this command runs it.
    worker: EmbeddedWorker | None = None
    organizer: User

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--games", nargs="+", metavar="GAME", help="only these games (default: all)"
        )
        parser.add_argument(
            "--matches", type=int, metavar="N", help="matches per duel (default: the game's)"
        )
        parser.add_argument(
            "--fresh", action="store_true", help="play a new tournament even if one completed"
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=600,
            help="seconds to wait for the workers to validate a game's players, and again "
            "to play its tournament",
        )
        parser.add_argument(
            "--llm-url",
            default=os.environ.get("ARENA_DEMO_LLM_URL", "http://127.0.0.1:8011/v1"),
            help="the OpenAI-compatible server of the demo's LLM players "
            "(default: $ARENA_DEMO_LLM_URL or the local rule-based one scripts/demo.sh serves)",
        )
        parser.add_argument(
            "--port",
            default=settings.ARENA_PORT,
            help="port printed in the login address (default: $ARENA_PORT or 8000)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["matches"] is not None and options["matches"] < 1:
            raise CommandError("--matches must be at least 1")
        if not settings.ARENA_EMBEDDED_BROKER:
            # In-process (eager), or a broker whose workers run elsewhere.
            self.worker = None
            self.play(options)
            return
        # The embedded broker: this command starts the worker that builds, validates and
        # plays, as ``run_gateway`` does, and stops it when the demo is ready.
        self.worker = site_worker(report=self.stderr.write)
        with self.worker:
            self.stdout.write(
                f"Started a Celery worker (pid {self.worker.pid}, log "
                f"{_shown_path(self.worker.log_path)}): it builds, validates and plays."
            )
            self.play(options)

    def play(self, options: dict[str, Any]) -> None:
        started = time.monotonic()
        environments = {environment.name: environment for environment in environments_import()}
        games = options["games"] or sorted(environments)
        unknown = sorted(set(games) - set(environments))
        if unknown:
            raise CommandError(
                f"unknown game(s): {', '.join(unknown)} (games: {', '.join(sorted(environments))})"
            )
        self.stdout.write(f"Imported {len(environments)} games: {', '.join(sorted(environments))}")
        warning = agents_confinement().warning()
        if warning:
            self.stdout.write(self.style.WARNING(warning))
        organizer, organizer_password = self.demo_user(
            ORGANIZER_EMAIL, "Demo organizer", Role.ORGANIZER
        )
        self.organizer = organizer
        attendee, attendee_password = self.demo_user(ATTENDEE_EMAIL, "Demo attendee", Role.ATTENDEE)
        invite = self.invite(organizer)

        for game in games:
            environment = environments[game]
            self.stdout.write("")
            self.stdout.write(self.style.MIGRATE_HEADING(f"=== {environment.title} ({game}) ==="))
            self.upload_players(
                environment, owners=(organizer, attendee), timeout=options["timeout"]
            )
            if game == LLM_GAME:
                self.llm_setup(
                    environment, owner=organizer, url=options["llm_url"], timeout=options["timeout"]
                )
            if environment.players == 1:
                self.score_competition(
                    environment,
                    organizer=organizer,
                    fresh=options["fresh"],
                    timeout=options["timeout"],
                )
                continue
            tournament = self.round_robin(
                environment,
                organizer=organizer,
                matches=options["matches"],
                fresh=options["fresh"],
                timeout=options["timeout"],
            )
            if tournament is not None:
                self.stdout.write("\n".join(standings_lines(tournament)))

        base = f"http://127.0.0.1:{options['port']}"
        token_file = None
        if ONLINE_GAME in games:
            token_file = self.online_setup(environments[ONLINE_GAME], owner=attendee)
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"Demo ready in {time.monotonic() - started:.1f} s."))
        self.stdout.write(f"  site:        {base}/")
        self.stdout.write(f"  log in at:   {base}{login_path()}  (admin: {base}/admin/)")
        self.stdout.write(f"  organizer:   {organizer.email}  password: {organizer_password}")
        self.stdout.write(f"  attendee:    {attendee.email}  password: {attendee_password}")
        self.stdout.write(f"  invite code: {invite.code}  (to register new accounts)")
        if LLM_GAME in games:
            self.llm_report(base, url=options["llm_url"])
        if token_file is not None:
            agent = EXAMPLE_PLAYERS_DIR / ONLINE_GAME / "random_player.py"
            self.stdout.write("")
            self.stdout.write(
                f"Online play: once the site is served, connect the reference random player as "
                f"the online model {ONLINE_MODEL!r} from another terminal:"
            )
            self.stdout.write(
                f"  .venv/bin/python -m arena_sdk connect --server {base} "
                f"--token-file {_shown_path(token_file)} --duels 3 "
                f"{_shown_path(agent)}"
            )
            self.stdout.write(
                f"  It joins the {ONLINE_LADDER!r}, is paired with the hosted players and "
                "prints each duel; watch them on the site."
            )

    def llm_setup(self, environment: Environment, *, owner: User, url: str, timeout: float) -> None:
        """The demo's two LLM players, registered once (a later run with another URL points
        them at it), so that the game's round robin has them."""
        if not llm_server_answers(url):
            self.stdout.write(
                self.style.WARNING(
                    f"No OpenAI-compatible server answers at {url}: the LLM players' duels "
                    "will end in error until one does (scripts/demo.sh starts "
                    "`python -m llm.local_server --port 8011`)."
                )
            )
        validations: list[tuple[Revision, str]] = []
        for name, temperature in LLM_PLAYERS:
            competitor = Competitor.objects.filter(environment=environment, name=name).first()
            if competitor is None:
                competitor = llm_player_register(
                    owner=owner,
                    environment=environment,
                    name=name,
                    base_url=url,
                    model=LLM_MODEL,
                    temperature=temperature,
                    max_tokens=256,
                    request_timeout=10.0,
                    # Shown to every visitor, with their conversations (their logs: shared
                    # below) beside the board.
                    is_public=True,
                )
                competitor_share_logs(competitor=competitor, share=True)
                self.stdout.write(
                    f"Registered the LLM player {name!r}: {LLM_MODEL} at {url}, "
                    f"temperature {temperature:g}"
                )
            elif competitor.is_llm and competitor.llm.base_url != url:
                llm_player_update(competitor=competitor, changed_by=owner, base_url=url)
                self.stdout.write(f"Pointed the LLM player {name!r} at {url}")
            newest = competitor.revisions.order_by("-version").first()
            if newest is not None and not newest.is_valid:
                # Validated by one request to the server, by the worker: waited for here,
                # as the uploads are, so that the round robin takes them in.
                validations.append((newest, "an LLM player: one request to its server"))
        self.wait_for_validations(validations, timeout=timeout)

    def llm_report(self, base: str, *, url: str) -> None:
        conversation = (
            MatchConversation.objects.filter(match__duel__tournament__isnull=False)
            .select_related("match__duel")
            .order_by("-pk")
            .first()
        )
        self.stdout.write("")
        names = " and ".join(repr(name) for name, _ in LLM_PLAYERS)
        self.stdout.write(
            f"LLM players: {names}, the rule-based model of `python -m llm.local_server` at "
            f"{url} at two temperatures, played in the {LLM_GAME} round robin."
        )
        if conversation is not None:
            match = conversation.match
            self.stdout.write(
                f"  a match with its conversation: {base}"
                f"{reverse('match', args=[match.duel_id, match.index])}"
            )
        self.stdout.write(f"  their statistics:             {base}{reverse('llm_index')}")
        self.stdout.write(
            '  A real model instead: README, "LLM players" (Ollama, vLLM, llama.cpp, an API).'
        )

    def online_setup(self, environment: Environment, *, owner: User) -> Path:
        """A running ladder of the game and the attendee's online model; a fresh model
        token (the demo's earlier ones revoked) in ``var/online/<game>.token``. The ladder
        is the game's standing one: it rests once its hosted entries have played their
        duels, so an idle demo costs no CPU, and plays the online model whenever it is
        queued."""
        ladder = ladder_open(
            environment=environment,
            name=f"{ONLINE_LADDER}: {environment.title}",
            matches_per_duel=2,
            standing=True,
        )
        if ladder is not None:
            self.stdout.write(f"Launched {ladder.name} for online play")
        competitor = Competitor.objects.filter(environment=environment, name=ONLINE_MODEL).first()
        if competitor is None:
            competitor, secret = online_model_register(
                owner=owner, environment=environment, name=ONLINE_MODEL, is_public=True
            )
            self.stdout.write(f"Registered the online model {ONLINE_MODEL!r}")
        else:
            _, secret = model_token_renew(
                competitor=competitor, name=f"demo token {timezone.now():%Y%m%d-%H%M%S%f}"
            )
        folder = Path(settings.VAR_DIR) / "online"
        folder.mkdir(parents=True, exist_ok=True)
        token_file = folder / f"{environment.name}.token"
        token_file.unlink(missing_ok=True)
        descriptor = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as written:
            written.write(secret + "\n")
        return token_file

    def demo_user(self, email: str, display_name: str, role: str) -> tuple[User, str]:
        """The demo account, with a new random password on every run (printed at the end)."""
        password = random_password()
        user, created = user_create_or_reset(
            email=email, display_name=display_name, role=role, password=password
        )
        if created:
            self.stdout.write(f"Created {role} {email}")
        return user, password

    def invite(self, organizer: User) -> InviteCode:
        invite, created = invite_code_get_or_create(
            code=INVITE_CODE, note="made by manage.py demo", created_by=organizer
        )
        if created:
            self.stdout.write(f"Created the invite code {INVITE_CODE!r}")
        elif not invite.is_usable():
            self.stdout.write(
                self.style.WARNING(
                    f"The invite code {INVITE_CODE!r} exists but is not usable (inactive, "
                    "expired or used up); change it in the admin"
                )
            )
        return invite

    def upload_players(
        self, environment: Environment, *, owners: tuple[User, User], timeout: float
    ) -> None:
        players = reference_players(environment.name)
        # A game of N seats needs N + 1 entrants for its round robin to have a choice of
        # groups: with fewer reference players, each is entered again under a new name.
        entrants = len(players)
        if players and environment.players > 2:
            entrants = max(entrants, environment.players + 1)
        uploads = []
        for index in range(entrants):
            player = players[index % len(players)]
            copy = index // len(players)
            name = player.name if copy == 0 else f"{player.name}-{copy + 1}"
            owner = owners[index % len(owners)]
            try:
                competitor = competitor_get_or_create(
                    owner=owner, environment=environment, name=name, is_public=True
                )
                uploads.append(self.upload(competitor, owner, player))
            except ArenaError as error:
                self.stdout.write(self.style.ERROR(f"  ✘ {name}: {error.message}"))
        self.wait_for_validations(uploads, timeout=timeout)

    def wait_for_validations(self, uploads: list[tuple[Revision, str]], *, timeout: float) -> None:
        """Report each upload as the workers finish building and validating it (in
        process, eagerly, they are done already); after ``timeout`` seconds, the rest as
        they are."""
        waiting = list(uploads)
        deadline = time.monotonic() + timeout
        while waiting:
            for revision, note in list(waiting):
                revision.refresh_from_db()
                if not revision.is_being_checked:
                    self.report_validation(revision, note)
                    waiting.remove((revision, note))
            if not waiting:
                return
            if time.monotonic() > deadline:
                for revision, note in waiting:
                    self.report_validation(revision, note)
                return
            self.check_worker()
            time.sleep(0.2)

    def check_worker(self) -> None:
        """Stop waiting for a worker that was given up on (it says why)."""
        if self.worker is not None and self.worker.failure is not None:
            raise CommandError(self.worker.failure)

    def upload(
        self, competitor: Competitor, owner: User, player: ReferencePlayer
    ) -> tuple[Revision, str]:
        """The competitor's revision with these bytes (uploaded, reused, or re-queued if it
        did not validate) and what was done. Its build and validation start once the upload
        commits: in a worker (``wait_for_validations``), or eagerly, over when this returns."""
        revision, done = revision_create_or_reuse(
            competitor=competitor,
            # The project's own reference players: where agents cannot be confined, the
            # organizer puts in the attendee's too (core.services.confinement).
            uploaded_by=self.organizer if upload_refusal(owner) else owner,
            filename=player.filename,
            content=player.content,
        )
        return revision, UPLOAD_NOTES[done]

    def report_validation(self, revision: Revision, note: str) -> None:
        about = ", ".join(part for part in (revision.filename, note) if part)
        name = f"{revision.competitor.name} v{revision.version} ({about})"
        build, validation = revision.job("build"), revision.job("validation")
        if revision.is_valid and validation is not None:
            took = validation.duration
            detail = (validation.log.splitlines() or [""])[0]
            when = f" in {took:.1f} s" if took is not None else ""
            detail = detail.removeprefix("validated: ")
            self.stdout.write(self.style.SUCCESS(f"  ✔ {name} validated{when}: {detail}"))
        elif revision.build_status == StepStatus.FAILED and build is not None:
            self.stdout.write(self.style.ERROR(f"  ✘ {name}: build failed: {build.error}"))
        elif revision.validation_status == StepStatus.FAILED and validation is not None:
            first = (validation.error.splitlines() or [""])[0]
            self.stdout.write(self.style.ERROR(f"  ✘ {name}: {first}"))
        elif revision.is_disabled:
            self.stdout.write(self.style.WARNING(f"  - {name}: disabled by an organizer"))
        else:
            self.stdout.write(
                f"  … {name}: build {revision.build_status}, "
                f"validation {revision.validation_status} (workers will finish it)"
            )

    def score_competition(
        self, environment: Environment, *, organizer: User, fresh: bool, timeout: float
    ) -> None:
        """A one-player game's reference players, each evaluated on the same seeded
        episodes and ranked by mean return (a score competition, as organizers run them)."""
        competition = (
            ScoreCompetition.objects.filter(environment=environment, name__startswith=SCORES_PREFIX)
            .order_by("-created_at")
            .first()
        )
        if (
            competition is not None
            and not fresh
            and competition.started_at is not None
            and not competition.evaluations.active().exists()
        ):
            self.stdout.write(
                f"Already evaluated: {competition.name} (pass --fresh to evaluate again)"
            )
            self.stdout.write("\n".join(score_lines(competition)))
            return
        if competition is None or fresh:
            competition = score_competition_create(
                environment=environment,
                name=f"{SCORES_PREFIX}: {environment.title}",
                episodes=SCORES_EPISODES,
                created_by=organizer,
            )
        try:
            evaluations = score_competition_start(competition=competition)
        except ArenaError as error:
            self.stdout.write(self.style.WARNING(f"No score competition: {error.message}"))
            return
        self.stdout.write(
            f"Evaluating {competition.name}: {len(evaluations)} agents, "
            f"{competition.episodes} episodes each"
        )
        began = time.monotonic()
        waiting = competition.evaluations.active()
        while waiting.exists() and time.monotonic() - began < timeout:
            self.check_worker()
            time.sleep(0.3)
        took = time.monotonic() - began
        left = waiting.count()
        line = f"{competition.name}: evaluated in {took:.1f} s"
        if left:
            self.stdout.write(self.style.WARNING(f"{line}; {left} still running"))
        else:
            self.stdout.write(self.style.SUCCESS(line))
        self.stdout.write("\n".join(score_lines(competition)))

    def round_robin(
        self,
        environment: Environment,
        *,
        organizer: User,
        matches: int | None,
        fresh: bool,
        timeout: float,
    ) -> Tournament | None:
        completed = (
            Tournament.objects.filter(environment=environment, status=TournamentStatus.COMPLETED)
            .order_by("-ended_at")
            .first()
        )
        if completed is not None and not fresh:
            self.stdout.write(
                f"Already played: {completed.name} (pass --fresh for a new tournament)"
            )
            return completed
        for stale in unfinished_demo_tournaments_cancel(
            environment=environment, organizer=organizer
        ):
            self.stdout.write(f"Cancelled the unfinished {stale.name}")
        revisions = round_robin_entrants(environment)
        if len(revisions) < 2:
            self.stdout.write(
                self.style.WARNING("Fewer than two validated players: no tournament.")
            )
            return None
        number = Tournament.objects.filter(environment=environment).count() + 1
        tournament = tournament_create(
            environment=environment,
            name=f"{TOURNAMENT_PREFIX} #{number}: {environment.title}",
            revisions=revisions,
            matches_per_duel=matches,
            created_by=organizer,
        )
        self.stdout.write(
            f"Playing {tournament.name}: {len(revisions)} players, "
            f"{tournament.matches_per_duel} matches a duel"
        )
        began = time.monotonic()
        tournament_launch(tournament=tournament)
        tournament.refresh_from_db()
        # Eagerly the duels are played by now; otherwise the workers play them meanwhile,
        # counted on a line of their own in a terminal.
        shown = None
        while not tournament.is_finished and time.monotonic() - began < timeout:
            self.check_worker()
            progress = f"  {tournament.duels_done}/{tournament.duels_total} duels played"
            if self.stdout.isatty() and progress != shown:
                self.stdout.write(f"\r{progress}", ending="")
                self.stdout.flush()
                shown = progress
            time.sleep(0.3)
            tournament.refresh_from_db()
        if shown is not None:
            self.stdout.write(f"\r{' ' * len(shown)}\r", ending="")
        took = time.monotonic() - began
        status = tournament.get_status_display().lower()
        line = (
            f"{tournament.name}: {status} in {took:.1f} s, "
            f"{tournament.duels_done}/{tournament.duels_total} duels played"
        )
        if tournament.status == TournamentStatus.COMPLETED:
            self.stdout.write(self.style.SUCCESS(line))
        else:
            self.stdout.write(self.style.WARNING(f"{line}. {tournament.error}".rstrip(". ")))
        return tournament
