"""LLM players in the data model: registering one, its key kept encrypted (or read from a
secret of the workers), a change of what plays making a new revision."""

from __future__ import annotations

import socket
from decimal import Decimal

import pytest
from cryptography.fernet import Fernet

from core.errors import ArenaError
from core.jobs.policies import VALIDATE_REVISION
from core.models import Competitor, CompetitorKind, LLMPlayer, Revision, StepStatus
from core.services.llm import llm_player_register, llm_player_update
from core.services.online import online_model_register
from core.services.revisions import revision_create, revision_revalidate
from core.services.uploads import UploadRejected
from duel_runner.validation import revision_validate
from llm.harness import HARNESS_VERSION
from llm.local_server import LocalLLMServer, Reply, rule_based
from tests.factories import EnvironmentFactory, LLMPlayerFactory

pytestmark = pytest.mark.django_db

KEY = "sk-test-0123456789abcdef"


def register(owner, **settings):
    return llm_player_register(
        owner=owner,
        environment=EnvironmentFactory(),
        name=settings.pop("name", "gpt-bot"),
        base_url=settings.pop("base_url", "http://127.0.0.1:8011/v1"),
        model="rule-based",
        **settings,
    )


def test_it_registers_a_competitor_that_plays_once_its_server_answered_one_request(
    alice, sent, django_capture_on_commit_callbacks
):
    with LocalLLMServer() as server:
        with django_capture_on_commit_callbacks(execute=True):
            competitor = register(alice, base_url=server.url, api_key=KEY, temperature=0.7)

        assert competitor.kind == CompetitorKind.LLM and competitor.is_llm
        revision = competitor.revisions.get()
        assert (revision.build_status, revision.validation_status) == (
            StepStatus.SUCCEEDED,
            StepStatus.QUEUED,
        )
        assert not revision.is_valid  # not paired before its server answered
        # Sent to the workers that reach the network.
        assert sent == [(VALIDATE_REVISION, revision.pk)]
        assert sent.queues[(VALIDATE_REVISION, revision.pk)] == "online"

        revision_validate(revision_id=revision.pk)

        revision.refresh_from_db()
        assert revision.is_valid, revision.job("validation").error
        log = revision.job("validation").log
        assert "validated by one request to its server" in log
        assert "answered the first move with a legal one" in log
        assert len(server.requests) == 1
    player = competitor.llm
    assert player.has_key and player.harness_version == HARNESS_VERSION
    config = player.config()
    assert (config.api_key, config.temperature, config.model) == (KEY, 0.7, "rule-based")
    assert KEY not in repr(config)


def test_a_player_whose_server_cannot_play_fails_its_validation_with_the_servers_words(alice, sent):
    with LocalLLMServer() as server:
        server.brain = lambda request: Reply("Invalid API key", status=401)
        competitor = register(alice, base_url=server.url, api_key=KEY)
        revision = competitor.revisions.get()

        revision_validate(revision_id=revision.pk)

    revision.refresh_from_db()
    assert not revision.is_valid
    assert revision.validation_status == StepStatus.FAILED
    error = revision.job("validation").error
    assert error.startswith("the server could not play:") and "Invalid API key" in error
    assert KEY not in error


def test_a_player_whose_server_is_unreachable_is_refused_at_validation_and_paired_nowhere(
    alice, sent
):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    # Nothing listens on the port any more: the dead URL of the ladder flood.
    competitor = register(alice, base_url=f"http://127.0.0.1:{port}/v1")
    revision = competitor.revisions.get()

    revision_validate(revision_id=revision.pk)

    revision.refresh_from_db()
    assert revision.validation_status == StepStatus.FAILED and not revision.is_valid
    assert revision.job("validation").error.startswith("the server could not play:")
    assert not Revision.objects.validated().filter(competitor=competitor).exists()


def test_it_stores_the_key_encrypted_only(alice):
    competitor = register(alice, api_key=KEY)

    stored = LLMPlayer.objects.filter(competitor=competitor).values()[0]
    assert KEY not in str(stored)
    assert stored["api_key_encrypted"] and stored["api_key_ref"] == ""


def test_it_refuses_a_taken_name(alice, bob):
    register(bob, name="taken")

    with pytest.raises(ArenaError, match="is taken"):
        register(alice, name="taken")
    assert not Competitor.objects.filter(owner=alice).exclude(name="alices-bot").exists()


def test_it_reads_a_key_reference_when_it_plays(organizer, monkeypatch, tmp_path, settings):
    competitor = register(organizer, api_key_ref="env:ARENA_LLM_KEY_TEST")

    with pytest.raises(ArenaError, match="ARENA_LLM_KEY_TEST, which is not set"):
        competitor.llm.config()
    monkeypatch.setenv("ARENA_LLM_KEY_TEST", KEY)
    assert competitor.llm.config().api_key == KEY

    settings.ARENA_LLM_SECRETS_DIR = str(tmp_path)
    (tmp_path / "course-key").write_text(KEY + "\n")
    llm_player_update(competitor=competitor, changed_by=organizer, api_key_ref="file:course-key")
    competitor.llm.refresh_from_db()
    assert competitor.llm.config().api_key == KEY


def test_it_lets_only_organizers_name_a_secret_of_the_workers(alice, organizer):
    # A reference sends a worker's secret to the player's server: an attendee would point
    # it at a server of their own.
    with pytest.raises(ArenaError, match="only organizers may give a secret reference"):
        register(alice, api_key_ref="env:ARENA_LLM_KEY_COURSE")
    competitor = register(organizer, name="course-bot", api_key_ref="env:ARENA_LLM_KEY_COURSE")
    Competitor.objects.filter(pk=competitor.pk).update(owner=alice)
    competitor.refresh_from_db()

    with pytest.raises(ArenaError, match="only they may point it at another server"):
        llm_player_update(
            competitor=competitor, changed_by=alice, base_url="http://attacker.example/v1"
        )
    competitor.llm.refresh_from_db()
    assert competitor.llm.base_url != "http://attacker.example/v1"


@pytest.mark.parametrize(
    "reference", ["env:DATABASE_URL", "env:ARENA_SECRET_KEY", "file:/etc/shadow", "file:../x"]
)
def test_it_never_reads_a_secret_outside_the_llm_keys(organizer, reference):
    competitor = register(organizer, name="course-bot")
    LLMPlayer.objects.filter(competitor=competitor).update(api_key_ref=reference)
    competitor.llm.refresh_from_db()

    with pytest.raises(ArenaError, match="is not env:ARENA_LLM_KEY_<NAME>"):
        competitor.llm.config()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://localhost/v1",
        "http://10.1.2.3/v1",
        "http://169.254.169.254/latest",
        "http://[::1]:8000/v1",
    ],
)
def test_it_keeps_attendees_off_private_addresses_when_the_organizers_say_so(
    alice, organizer, settings, url
):
    settings.ARENA_LLM_PRIVATE_URLS = "organizers"

    with pytest.raises(ArenaError, match="private or local address"):
        register(alice, base_url=url)
    competitor = register(organizer, name="local-bot", base_url=url)
    assert competitor.llm.base_url == url

    # Checked again where it plays, with its owner's rights.
    Competitor.objects.filter(pk=competitor.pk).update(owner=alice)
    competitor.refresh_from_db()
    with pytest.raises(ArenaError, match=r"may not play: .* private or local address"):
        competitor.llm.config()


def test_it_lets_nobody_reach_private_addresses_when_told_so(organizer, settings):
    settings.ARENA_LLM_PRIVATE_URLS = "nobody"
    with pytest.raises(ArenaError, match="only nobody may point"):
        register(organizer, base_url="http://192.168.1.20/v1")


def test_it_says_to_re_enter_a_key_the_secrets_key_no_longer_opens(alice, settings):
    competitor = register(alice, api_key=KEY)

    settings.ARENA_SECRETS_KEY = Fernet.generate_key().decode()

    with pytest.raises(ArenaError, match="re-enter the key"):
        LLMPlayer.objects.get(competitor=competitor).config()


def test_it_keeps_keys_readable_across_secret_key_rotation_with_a_secrets_key(alice, settings):
    settings.ARENA_SECRETS_KEY = Fernet.generate_key().decode()
    competitor = register(alice, api_key=KEY)

    settings.SECRET_KEY = "rotated"

    assert LLMPlayer.objects.get(competitor=competitor).config().api_key == KEY


def test_it_makes_a_new_revision_when_what_plays_changes(alice):
    competitor = register(alice, api_key=KEY)

    assert llm_player_update(competitor=competitor, changed_by=alice, temperature=1.0)
    assert llm_player_update(competitor=competitor, changed_by=alice, api_key="sk-other")
    assert llm_player_update(competitor=competitor, changed_by=alice, model="other-model")

    assert competitor.revisions.count() == 4
    player = LLMPlayer.objects.get(competitor=competitor)
    assert (player.temperature, player.model, player.config().api_key) == (
        1.0,
        "other-model",
        "sk-other",
    )


def test_it_makes_no_revision_for_the_same_settings_a_kept_key_or_prices(alice):
    competitor = register(alice, api_key=KEY, temperature=0.5)

    unchanged = [
        llm_player_update(competitor=competitor, changed_by=alice, temperature=0.5),
        llm_player_update(competitor=competitor, changed_by=alice, api_key=""),
        llm_player_update(competitor=competitor, changed_by=alice, api_key=KEY),
        llm_player_update(
            competitor=competitor,
            changed_by=alice,
            price_input_per_million="2.50",
            price_output_per_million=10,
            is_public=False,
        ),
    ]

    assert unchanged == [None, None, None, None]
    assert competitor.revisions.count() == 1
    player = LLMPlayer.objects.get(competitor=competitor)
    assert player.price_input_per_million == Decimal("2.5")
    assert player.config().api_key == KEY
    assert not Competitor.objects.get(pk=competitor.pk).is_public


def test_it_refuses_uploads_for_an_llm_player(alice):
    player = LLMPlayerFactory(competitor__owner=alice)

    with pytest.raises(UploadRejected, match="is an LLM player"):
        revision_create(
            competitor=player.competitor, uploaded_by=alice, filename="a.py", content=b"print(1)"
        )


def test_a_player_whose_server_failed_once_validates_again_by_one_more_request(alice, sent):
    with LocalLLMServer() as server:
        server.brain = lambda request: Reply("Service unavailable", status=503)
        competitor = register(alice, base_url=server.url)
        revision = competitor.revisions.get()
        revision_validate(revision_id=revision.pk)
        revision.refresh_from_db()
        assert revision.validation_status == StepStatus.FAILED
        server.brain = rule_based  # the server is back
        asked = len(server.requests)

        assert revision_revalidate(revision=revision)
        revision_validate(revision_id=revision.pk)

        revision.refresh_from_db()
        assert revision.is_valid, revision.job("validation").error
        assert len(server.requests) == asked + 1  # one request: no self-play


def test_an_online_model_has_no_validation_to_run_again(alice):
    online, _token = online_model_register(
        owner=alice, environment=EnvironmentFactory(), name="my-model"
    )
    with pytest.raises(ArenaError, match="checked as it plays"):
        revision_revalidate(revision=online.revisions.get())
