"""LLM players in the data model: registering one, its key kept encrypted (or read from a
secret of the workers), a change of what plays making a new revision."""

from __future__ import annotations

from decimal import Decimal

import pytest
from cryptography.fernet import Fernet

from core.errors import ArenaError
from core.llm import llm_player_register, llm_player_update
from core.models import Competitor, CompetitorKind, LLMPlayer, StepStatus
from core.services import revision_create, revision_revalidate
from core.uploads import UploadRejected
from llm.harness import HARNESS_VERSION
from tests.factories import EnvironmentFactory, LLMPlayerFactory

pytestmark = pytest.mark.django_db

KEY = "sk-test-0123456789abcdef"


def register(owner, **settings):
    return llm_player_register(
        owner=owner,
        environment=EnvironmentFactory(),
        name=settings.pop("name", "gpt-bot"),
        base_url="http://127.0.0.1:8011/v1",
        model="rule-based",
        **settings,
    )


def test_it_registers_a_competitor_ready_to_play_with_nothing_to_build(alice):
    competitor = register(alice, api_key=KEY, temperature=0.7)

    assert competitor.kind == CompetitorKind.LLM and competitor.is_llm
    revision = competitor.revisions.get()
    assert revision.is_valid
    assert revision.build_status == revision.validation_status == StepStatus.SUCCEEDED
    assert "not validated by self-play" in revision.validation_log
    player = competitor.llm
    assert player.has_key and player.harness_version == HARNESS_VERSION
    config = player.config()
    assert (config.api_key, config.temperature, config.model) == (KEY, 0.7, "rule-based")
    assert KEY not in repr(config)


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


def test_it_reads_a_key_reference_when_it_plays(alice, monkeypatch, tmp_path):
    competitor = register(alice, api_key_ref="env:ARENA_TEST_LLM_KEY")

    with pytest.raises(ArenaError, match="ARENA_TEST_LLM_KEY, which is not set"):
        competitor.llm.config()
    monkeypatch.setenv("ARENA_TEST_LLM_KEY", KEY)
    assert competitor.llm.config().api_key == KEY

    (tmp_path / "key").write_text(KEY + "\n")
    llm_player_update(competitor=competitor, changed_by=alice, api_key_ref=f"file:{tmp_path}/key")
    competitor.llm.refresh_from_db()
    assert competitor.llm.config().api_key == KEY


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


def test_it_refuses_uploads_and_self_play_for_an_llm_player(alice):
    player = LLMPlayerFactory(competitor__owner=alice)
    competitor = player.competitor

    with pytest.raises(UploadRejected, match="is an LLM player"):
        revision_create(
            competitor=competitor, uploaded_by=alice, filename="a.py", content=b"print(1)"
        )
    with pytest.raises(ArenaError, match="checked as it plays"):
        revision_revalidate(revision=competitor.revisions.get())
