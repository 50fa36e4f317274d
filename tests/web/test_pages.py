"""Every page renders with what it is for."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse
from django.utils import timezone
from django.utils.html import strip_tags

from core.models import (
    Duel,
    DuelStatus,
    Job,
    JobKind,
    StepStatus,
    Tournament,
    TournamentFormat,
)
from tests.factories import (
    DuelFactory,
    EnvironmentFactory,
    LeaderboardEntryFactory,
    RevisionFactory,
    TournamentFactory,
)
from tests.support.responses import text

pytestmark = pytest.mark.django_db


def visible_text(response) -> str:
    return re.sub(r"\s+", " ", html.unescape(strip_tags(response.content.decode())))


def test_it_lists_active_environments_and_recent_tournaments_on_the_home_page(
    client, tournament, alices_bot, bobs_bot
):
    EnvironmentFactory(name="connect_four", is_active=False)

    response = client.get(reverse("home"))

    page = text(response)
    assert response.status_code == 200
    assert "Tic-tac-toe" in page
    assert "The classic game on a 3x3 grid" in page
    assert "2 competitors" in page
    assert "Connect Four" not in page
    assert "Autumn cup" in page
    assert reverse("environment", args=["tic_tac_toe"]) in page


def test_the_home_page_shows_what_runs_now_and_each_games_top_three(client, alices_bot):
    ladder = TournamentFactory(
        name="Spring ladder", format=TournamentFormat.LADDER, status="running", is_public=True
    )
    TournamentFactory(name="Hidden ladder", status="running", is_public=False)
    live = DuelFactory(tournament=ladder, status=DuelStatus.RUNNING, started_at=timezone.now())
    top = [
        LeaderboardEntryFactory(
            revision__competitor__is_public=True, revision__competitor__name=name, rank=rank
        )
        for rank, name in ((1, "first"), (2, "second"), (3, "third"), (4, "fourth"))
    ]
    # alice's private bot ranks first for her, never for the public.
    LeaderboardEntryFactory(revision=alices_bot.revisions.get(), rank=1)

    page = client.get(reverse("home")).content.decode()

    running = page[page.index("data-running-now") :]
    assert "Spring ladder" in running and "Hidden ladder" not in page
    assert live.get_absolute_url() in running
    card = page[page.index('aria-label="Top of the leaderboard"') :]
    card = card[: card.index("</ol>")]
    assert [entry.competitor.name for entry in top[:3]] == re.findall(r">(\w+)</a>", card)
    assert "alices-bot" not in card


def test_it_counts_players_in_words_that_agree_with_the_number(client, tournament):
    EnvironmentFactory(name="cartpole")

    page = text(client.get(reverse("home")))

    assert "1 player" in page and "1 players" not in page
    assert "2 players" in page


def test_every_page_names_the_sites_icon_and_favicon_ico_leads_to_it(client, tournament):
    page = text(client.get(reverse("home")))
    icon = client.get("/favicon.ico")

    assert 'rel="icon"' in page and "favicon.svg" in page
    assert icon.status_code == 301 and icon["Location"].endswith("web/favicon.svg")
    # A static file, served as the others are (nginx in production).
    found = finders.find("web/favicon.svg")
    assert found is not None and Path(found).read_text().startswith("<svg")


def test_it_shows_the_rules_the_leaderboard_and_the_tournaments_of_an_environment(
    client, tournament, leaderboard
):
    response = client.get(reverse("environment", args=["tic_tac_toe"]))

    page = text(response)
    words = visible_text(response)
    assert response.status_code == 200
    assert "Two players take turns marking an empty cell" in page
    # alice's private bot is on the leaderboard, by name, unlinked; bob's is linked; the
    # newcomer, though its score is higher than bob's, comes after them, provisional.
    assert page.index("alices-bot") < page.index("bobs-bot") < page.index("carols-bot")
    assert "1 alices-bot v1 private Alice 1634 ± 81 1\N{EN DASH}2 12 9-1-2" in words
    assert "2 bobs-bot v1 Bob 1513 ± 77 1\N{EN DASH}2 12 2-1-9" in words
    assert "provisional carols-bot v1 private" in words
    assert "1580 ± 240 1\N{EN DASH}3 2 2-0-0" in words
    assert "Moving first is worth 42 points" in words
    assert "current revision, just now." in words
    assert "Alice" in page and "Bob" in page
    assert 'href="/environments/tic_tac_toe/competitors/bobs-bot/"' in page
    assert 'href="/environments/tic_tac_toe/competitors/alices-bot/"' not in page
    assert "Autumn cup" in page
    assert "to upload an agent" in page  # no form for anonymous visitors


def test_it_offers_the_submit_form_to_a_logged_in_user(alice_client):
    response = alice_client.get(reverse("environment", args=["tic_tac_toe"]))

    page = text(response)
    assert 'name="name"' in page and 'name="file"' in page and 'name="is_public"' in page
    assert "Your competitors here" in page and "alices-bot" in page


def test_it_hides_private_tournaments_from_everyone_but_organizers(client, tournament, organizer):
    Tournament.objects.filter(pk=tournament.pk).update(is_public=False)
    url = reverse("environment", args=["tic_tac_toe"])

    assert "Autumn cup" not in text(client.get(url))
    assert client.get(tournament.get_absolute_url()).status_code == 404
    client.force_login(organizer)
    assert "Autumn cup" in text(client.get(url))
    assert client.get(tournament.get_absolute_url()).status_code == 200


def test_it_shows_a_competitor_with_its_rating_revisions_and_tournaments(
    client, bobs_bot, tournament, ratings, leaderboard
):
    RevisionFactory(competitor=bobs_bot)

    response = client.get(bobs_bot.get_absolute_url())

    page = text(response)
    assert response.status_code == 200
    assert "Bob" in page
    assert "Public" in page
    words = visible_text(response)
    assert "Leaderboard#2 (could rank 1\N{EN DASH}2)" in words
    assert "Score1513 ± 77 (v1: 12 matches, 2-1-9)" in words
    # One rating in the product: the leaderboard's score; openskill's mu and sigma are not
    # shown.
    assert "μ / \N{GREEK SMALL LETTER SIGMA}" not in words
    assert "v1" in page and "v2" in page
    assert "Validated" in page and "Queued" in page
    assert "Autumn cup" in page
    assert "Upload a new revision" not in page  # not bob's visitor


def test_it_offers_the_owner_an_upload_form_on_the_competitor_page(alice_client, alices_bot):
    response = alice_client.get(alices_bot.get_absolute_url())

    assert response.status_code == 200
    assert "Upload a new revision" in text(response)


def test_it_shows_a_revision_with_its_steps_logs_and_validation_duel(
    alice_client, alices_revision, validation_duel
):
    Job.objects.filter(kind=JobKind.BUILD, revision=alices_revision).update(
        log="unpacked 1 file(s)"
    )

    response = alice_client.get(alices_revision.get_absolute_url())

    page = text(response)
    assert response.status_code == 200
    assert "Build" in page and "Validation" in page and "Publication" in page
    assert "Succeeded" in page
    assert "1.0 min" not in page and "1 min 00 s" in page  # each step took a minute
    assert "unpacked 1 file(s)" in page
    assert "validated by self-play" in page
    assert validation_duel.get_absolute_url() in page
    assert reverse("match", args=[validation_duel.pk, 0]) in page
    assert reverse("revision_source", args=["tic_tac_toe", "alices-bot", 1]) in page
    assert 'http-equiv="refresh"' not in page


def test_it_refreshes_a_revision_page_while_a_step_is_queued_or_running(client, bobs_bot):
    revision = RevisionFactory(competitor=bobs_bot, validation_status=StepStatus.RUNNING)

    response = client.get(revision.get_absolute_url())

    assert '<meta http-equiv="refresh" content="3">' in text(response)


def test_it_shows_a_failed_build_with_its_error(client, bobs_bot):
    revision = RevisionFactory(
        competitor=bobs_bot,
        build_status=StepStatus.FAILED,
        build_error="syntax error:\nmain.py, line 3: invalid syntax",
        validation_status=StepStatus.NONE,
    )

    page = text(client.get(revision.get_absolute_url()))

    assert "Build failed" in page
    assert "main.py, line 3: invalid syntax" in page


def test_it_shows_a_build_retried_after_its_worker_stopped_with_its_attempts(client, bobs_bot):
    revision = RevisionFactory(
        competitor=bobs_bot,
        build_status=StepStatus.FAILED,
        build_attempts=3,
        build_error="The worker building this revision stopped 3 times before it finished",
        validation_status=StepStatus.NONE,
    )

    response = client.get(revision.get_absolute_url())

    page = html.unescape(response.content.decode())
    assert re.search(r"<th[^>]*>Attempts</th>", page)
    assert re.search(r'<td class="num">3</td>', page)
    assert "stopped 3 times" in text(response)


def test_it_downloads_the_source_of_a_public_revision(client, bobs_revision):
    response = client.get(reverse("revision_source", args=["tic_tac_toe", "bobs-bot", 1]))

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == bobs_revision.source.open("rb").read()
    assert 'attachment; filename="random_player.py"' in response["Content-Disposition"]


def test_it_shows_a_tournament_with_progress_standings_and_duels(client, tournament, duel):
    response = client.get(tournament.get_absolute_url())

    page = text(response)
    assert response.status_code == 200
    assert "Completed" in page
    assert "Round robin" in page
    assert "1 of 1 duel played" in page
    assert page.index("alices-bot") < page.index("bobs-bot")
    assert "1 / 0 / 0" in page and "0 / 0 / 1" in page
    assert duel.get_absolute_url() in page
    assert "alices-bot v1 won" in page
    assert 'http-equiv="refresh"' not in page and "data-refresh-seconds" not in page


def test_it_shows_buchholz_in_the_standings_of_a_swiss_tournament_only(client, tournament):
    round_robin = visible_text(client.get(tournament.get_absolute_url()))
    Tournament.objects.filter(pk=tournament.pk).update(format=TournamentFormat.SWISS, rounds=3)
    tournament.participants.filter(rank=1).update(buchholz=7)

    response = client.get(tournament.get_absolute_url())

    assert "Buchholz" not in round_robin
    assert re.search(r"<th[^>]*>Buchholz</th>", text(response))
    assert re.search(r'<td class="num strong">2</td>\s*<td class="num">7</td>', text(response))
    assert "ties broken by Buchholz" in visible_text(response)


def test_it_refreshes_a_running_tournament(client, tournament):
    Tournament.objects.filter(pk=tournament.pk).update(
        status="running", duels_total=4, duels_done=1, duels_failed=1
    )

    response = client.get(tournament.get_absolute_url())

    # In place with JavaScript (tests/browser/test_tournament_refresh.py), reloaded without.
    assert 'data-refresh-seconds="5"' in text(response) and "web/refresh.js" in text(response)
    assert '<noscript><meta http-equiv="refresh" content="5"></noscript>' in text(response)
    assert "1 of 4 duels played (25%), 1 failed (25%)" in visible_text(response)


def test_it_estimates_the_time_left_of_a_running_tournament(client, tournament, duel):
    Tournament.objects.filter(pk=tournament.pk).update(
        status="running", duels_total=4, duels_done=1
    )

    response = client.get(tournament.get_absolute_url())

    # One duel took a minute; three are left.
    assert "About 3 min left." in visible_text(response)


def test_it_shows_a_duel_with_its_result_and_matches(client, duel, match):
    response = client.get(duel.get_absolute_url())

    page = text(response)
    assert response.status_code == 200
    assert "alices-bot v1 won" in page
    assert "Played" in page
    assert match.get_absolute_url() in page
    assert "Autumn cup" in page


def test_it_shows_a_duels_seed_only_once_the_duel_is_over(client, duel):
    # The seed decides every chance event of the matches (an OpenSpiel game's cards and
    # dice): an agent's owner watching a running duel must not read it.
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.RUNNING, seed=987654321)
    running = text(client.get(duel.get_absolute_url()))
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.SUCCEEDED)
    finished = text(client.get(duel.get_absolute_url()))

    assert "987654321" not in running
    assert "shown once the duel is over" in running
    assert "987654321" in finished


def test_it_shows_a_replay_page_for_a_tournament_match(client, match):
    response = client.get(match.get_absolute_url())

    page = text(response)
    assert response.status_code == 200
    assert 'id="replay-views"' in page
    assert "tic-tac-toe-board" in page
    assert reverse("environment_static", args=["tic_tac_toe", "tic_tac_toe.css"]) in page
    assert "web/replay.js" in page


def test_it_serves_only_the_stylesheets_of_a_game(client):
    css = client.get(reverse("environment_static", args=["tic_tac_toe", "tic_tac_toe.css"]))
    other = client.get(reverse("environment_static", args=["tic_tac_toe", "environment.py"]))
    info = client.get("/environments/tic_tac_toe/static/..%2Finfo.yml")
    unknown = client.get(reverse("environment_static", args=["no_such_game", "x.css"]))

    assert css.status_code == 200
    assert css["Content-Type"].startswith("text/css")
    assert b".tic-tac-toe-board" in b"".join(css.streaming_content)
    assert other.status_code == info.status_code == unknown.status_code == 404


def test_it_answers_404_for_an_unknown_environment(client):
    assert client.get(reverse("environment", args=["no-such-game"])).status_code == 404


def test_it_shows_an_inactive_environment_as_closed(client):
    EnvironmentFactory(name="tic_tac_toe", is_active=False)

    response = client.get(reverse("environment", args=["tic_tac_toe"]))

    assert response.status_code == 200
    assert "closed to new uploads" in text(response)


def test_it_links_the_admin_for_organizers_only(client, organizer, carol):
    client.force_login(carol)
    assert reverse("admin:index") not in text(client.get(reverse("home")))

    client.force_login(organizer)
    assert reverse("admin:index") in text(client.get(reverse("home")))


def test_it_says_how_long_ago_the_leaderboard_was_fitted(client, leaderboard):
    environment = leaderboard[0].environment
    environment.leaderboard_fitted_at = timezone.now() - timedelta(hours=2, minutes=3)
    environment.save(update_fields=["leaderboard_fitted_at"])

    response = client.get(reverse("environment", args=["tic_tac_toe"]))

    assert "current revision, 2 hours, 3 minutes ago." in visible_text(response)
