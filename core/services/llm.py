"""LLM players: registering them and changing what they play with.

An LLM player is a competitor whose seat Arena's harness (``llm``) plays by prompting a
model behind an OpenAI-compatible server. Nothing is uploaded, built or self-played (that
would spend its owner's tokens for nothing): every answer is checked as it plays. Each
change of what plays (server, model, sampling, limits, harness version, key) is a new
revision, whose leaderboard entry starts afresh as an upload's does.

Inputs are checked by the forms and the API's schemas; these services assume them valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.db import transaction

from core.errors import ArenaError
from core.models import Competitor, CompetitorKind, Environment, LLMPlayer, Revision, User
from core.models.llm import PLAYING_FIELDS
from core.models.submissions import PUBLIC_BY_DEFAULT
from core.secrets import reference_refusal, secret_encrypt, url_refusal
from core.services.revisions import competitor_create_unbuilt, revision_create_unbuilt

LLM_BUILD_LOG = (
    "An LLM player: there is nothing to build; Arena's harness prompts its model through "
    "an OpenAI-compatible server."
)
#: What ``llm_player_update`` may change: what plays, the key, and the organizers' prices.
UPDATABLE_FIELDS = (*PLAYING_FIELDS, "api_key", "api_key_ref", "is_public")
PRICE_FIELDS = ("price_input_per_million", "price_output_per_million")


def llm_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """The player's settings among ``values`` (a form's cleaned data, an API payload): what
    ``llm_player_register`` and ``llm_player_update`` take besides who and where."""
    return {name: values[name] for name in UPDATABLE_FIELDS if name in values}


def llm_revision_create(*, competitor: Competitor, created_by: User) -> Revision:
    """Its next revision, validated by one real request to its server (``llm.probe``,
    on the workers that reach the network): it plays once its server answered."""
    return revision_create_unbuilt(
        competitor=competitor, created_by=created_by, build_log=LLM_BUILD_LOG
    )


def llm_player_register(
    *,
    owner: User,
    environment: Environment,
    name: str,
    base_url: str,
    model: str,
    api_key: str = "",
    api_key_ref: str = "",
    temperature: float | None = None,
    top_p: float | None = None,
    max_tokens: int = 512,
    seed: int | None = None,
    request_timeout: float = 60.0,
    harness_version: str | None = None,
    is_public: bool = PUBLIC_BY_DEFAULT,
) -> Competitor:
    """A new LLM competitor, its settings and its first revision, ready to play. ArenaError
    if its owner may not point it at ``base_url`` or give a secret reference."""
    refusal = url_refusal(base_url, by=owner) or reference_refusal(api_key_ref, by=owner)
    if refusal:
        raise ArenaError(refusal)
    with transaction.atomic():
        competitor = competitor_create_unbuilt(
            owner=owner,
            environment=environment,
            name=name,
            is_public=is_public,
            kind=CompetitorKind.LLM,
        )
        player = LLMPlayer(
            competitor=competitor,
            base_url=base_url,
            model=model,
            api_key_encrypted=secret_encrypt(api_key),
            api_key_ref="" if api_key else api_key_ref,
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_tokens,
            seed=seed,
            request_timeout=request_timeout,
        )
        if harness_version:
            player.harness_version = harness_version
        player.save()
        llm_revision_create(competitor=competitor, created_by=owner)
    return competitor


def llm_player_update(
    *, competitor: Competitor, changed_by: User, **changes: Any
) -> Revision | None:
    """Change an LLM player's settings (``UPDATABLE_FIELDS``, and the prices for the
    organizers' forms); returns the new revision when what plays changed, else None.

    ``api_key``: a new key ("" or absent keeps the stored one); setting ``api_key_ref``
    drops a stored key, and a new key drops the reference. Prices and visibility change
    no revision: the model plays the same.
    """
    unknown = set(changes) - {*UPDATABLE_FIELDS, *PRICE_FIELDS}
    if unknown:
        raise TypeError(f"not an LLM player's setting: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        player = LLMPlayer.objects.select_for_update().get(competitor=competitor)
        _check_change(player, changes, by=changed_by)
        plays_differently = False
        for field in (*PLAYING_FIELDS, *PRICE_FIELDS):
            if field in changes and getattr(player, field) != _typed(field, changes[field]):
                setattr(player, field, _typed(field, changes[field]))
                plays_differently |= field in PLAYING_FIELDS
        new_key = changes.get("api_key") or ""
        new_ref = changes.get("api_key_ref")
        if new_key:
            # A key is re-encrypted each time (Fernet is randomised): compare in clear.
            if player.api_key_ref or _stored_key(player) != new_key:
                player.api_key_encrypted = secret_encrypt(new_key)
                player.api_key_ref = ""
                plays_differently = True
        elif new_ref is not None and new_ref != player.api_key_ref:
            player.api_key_ref = new_ref
            if new_ref:
                player.api_key_encrypted = ""
            plays_differently = True
        player.save()
        if "is_public" in changes and changes["is_public"] != competitor.is_public:
            Competitor.objects.filter(pk=competitor.pk).update(is_public=changes["is_public"])
            competitor.is_public = changes["is_public"]
        if plays_differently:
            return llm_revision_create(competitor=competitor, created_by=changed_by)
    return None


def _check_change(player: LLMPlayer, changes: dict[str, Any], *, by: User) -> None:
    """ArenaError if ``by`` may not make these changes (``core.secrets``)."""
    new_url = changes.get("base_url")
    if new_url and new_url != player.base_url:
        keeps_reference = (
            player.api_key_ref and changes.get("api_key_ref", "x") and not (changes.get("api_key"))
        )
        if keeps_reference and not by.is_organizer:
            raise ArenaError(
                "this player's key is a secret of Arena's workers, set by the organizers: "
                "only they may point it at another server (or give a key of your own with "
                "the new URL)"
            )
        refusal = url_refusal(new_url, by=by)
        if refusal:
            raise ArenaError(refusal)
    refusal = reference_refusal(changes.get("api_key_ref") or "", by=by)
    if refusal and changes.get("api_key_ref") != player.api_key_ref:
        raise ArenaError(refusal)


def _typed(field: str, value: Any) -> Any:
    if field in PRICE_FIELDS:
        return Decimal(str(value))
    return value


def _stored_key(player: LLMPlayer) -> str | None:
    """The stored key in clear, or None when it cannot be decrypted any more."""
    try:
        return player.api_key()
    except ArenaError:
        return None
