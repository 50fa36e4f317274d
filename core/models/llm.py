"""LLM players: a model behind an OpenAI-compatible server, and its conversations.

The harness that turns games into prompts is platform code (``llm``); an LLM player's
row holds only where the model is, how to sample it and its key (encrypted, or a
reference to a secret of the workers: ``core.secrets``).
"""

from __future__ import annotations

from decimal import Decimal

from django.core.validators import (
    BaseValidator,
    MaxValueValidator,
    MinValueValidator,
    RegexValidator,
    URLValidator,
)
from django.db import models
from django.db.models import Q

from core.errors import ArenaError
from core.models.submissions import Competitor
from core.models.tournaments import Match, one_per_player_of_match
from core.secrets import (
    SECRET_REF_HELP,
    SECRET_REF_PATTERN,
    secret_decrypt,
    secret_resolve,
    url_refusal,
)
from llm.config import LLMConfig
from llm.prompts import HARNESS_VERSION, SUPPORTED_HARNESS_VERSIONS

#: The ranges the sampling settings and limits may take (forms and the API check them).
TEMPERATURE_RANGE = (0.0, 2.0)
TOP_P_RANGE = (0.0, 1.0)
MAX_TOKENS_RANGE = (1, 32_768)
REQUEST_TIMEOUT_RANGE = (1.0, 600.0)
MODEL_NAME_MAX = 200
#: A model's name: printable, no control characters (it goes into URLs and requests).
MODEL_NAME_PATTERN = r"^[^\x00-\x1f\x7f]+$"

#: What changes how the player plays (its ``LLMConfig``, but for the key): a change of any
#: makes a new revision.
PLAYING_FIELDS = (
    "base_url",
    "model",
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "request_timeout",
    "harness_version",
)


def _range(bounds: tuple[float, float]) -> list[BaseValidator]:
    return [MinValueValidator(bounds[0]), MaxValueValidator(bounds[1])]


def _price_per_million(help_text: str) -> models.DecimalField[Decimal, Decimal]:
    """A price of a million tokens, set by the organizers."""
    return models.DecimalField(
        max_digits=12,
        decimal_places=4,
        default=Decimal(0),
        validators=[MinValueValidator(Decimal(0))],
        help_text=help_text,
    )


class LLMPlayer(models.Model):
    """What an LLM competitor plays with: its server, its model, its sampling and its key."""

    competitor = models.OneToOneField(Competitor, on_delete=models.CASCADE, related_name="llm")
    base_url = models.URLField(
        max_length=500,
        validators=[URLValidator(schemes=["http", "https"])],
        help_text="An OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.",
    )
    model = models.CharField(
        max_length=MODEL_NAME_MAX,
        validators=[RegexValidator(MODEL_NAME_PATTERN, "Printable characters only.")],
        help_text="The model name sent in requests.",
    )
    #: Fernet-encrypted (``core.secrets``); never shown back.
    api_key_encrypted = models.TextField(blank=True, editable=False)
    api_key_ref = models.CharField(
        max_length=300,
        blank=True,
        validators=[RegexValidator(SECRET_REF_PATTERN, f"Write {SECRET_REF_HELP}.")],
        help_text=f"Instead of a stored key: {SECRET_REF_HELP}, read when it plays.",
    )
    temperature = models.FloatField(null=True, blank=True, validators=_range(TEMPERATURE_RANGE))
    top_p = models.FloatField(null=True, blank=True, validators=_range(TOP_P_RANGE))
    max_tokens = models.PositiveIntegerField(default=512, validators=_range(MAX_TOKENS_RANGE))
    seed = models.BigIntegerField(null=True, blank=True)
    request_timeout = models.FloatField(
        default=60.0,
        validators=_range(REQUEST_TIMEOUT_RANGE),
        help_text="Seconds one request may take; a longer wait is the provider's failure.",
    )
    harness_version = models.CharField(
        max_length=16,
        choices=[(version, version) for version in SUPPORTED_HARNESS_VERSIONS],
        default=HARNESS_VERSION,
    )
    #: Set by the organizers; what the statistics' cost is computed with.
    price_input_per_million = _price_per_million(
        "Price of a million prompt tokens (for the statistics' cost)."
    )
    price_output_per_million = _price_per_million("Price of a million completion tokens.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "LLM player"
        constraints = [
            models.CheckConstraint(
                condition=Q(max_tokens__gte=1), name="llm_player_max_tokens_positive"
            ),
            models.CheckConstraint(
                condition=Q(request_timeout__gt=0), name="llm_player_timeout_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} at {self.base_url}"

    @property
    def has_key(self) -> bool:
        return bool(self.api_key_encrypted or self.api_key_ref)

    def api_key(self) -> str:
        """The key in clear, for the request headers only; ArenaError if it cannot be had."""
        what = f"the LLM player {self.competitor.name}"
        if self.api_key_ref:
            return secret_resolve(self.api_key_ref, what=what)
        return secret_decrypt(self.api_key_encrypted, what=what)

    def config(self) -> LLMConfig:
        """What the seat plays with, the key in clear. ArenaError if it may not play: its
        key cannot be had, or its server's address is one its owner may not reach (checked
        again here, where it plays: a host name may have been made to point elsewhere)."""
        refusal = url_refusal(self.base_url, by=self.competitor.owner)
        if refusal:
            raise ArenaError(f"the LLM player {self.competitor.name} may not play: {refusal}")
        playing = {field: getattr(self, field) for field in PLAYING_FIELDS}
        return LLMConfig(api_key=self.api_key(), **playing)


#: The counters of a conversation's summary (``llm.records``), stored as columns.
SUMMARY_COUNTERS = (
    "moves",
    "requests",
    "illegal",
    "unparseable",
    "too_long",
    "retries",
    "provider_retries",
    "prompt_tokens",
    "completion_tokens",
)


class MatchConversation(models.Model):
    """Everything an LLM seat said in one match: every request and answer of every move."""

    match = models.ForeignKey(Match, on_delete=models.CASCADE, related_name="conversations")
    #: The duel player (1 to the duel's number of players).
    player = models.PositiveSmallIntegerField()
    #: Its rank in the match by score (1 best, equal scores sharing a rank).
    rank = models.PositiveSmallIntegerField(null=True, blank=True)
    competitor = models.ForeignKey(
        Competitor, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    model = models.CharField(max_length=MODEL_NAME_MAX, db_index=True)
    harness_version = models.CharField(max_length=16)
    harness_hash = models.CharField(max_length=64)
    #: ``llm.records`` turns: the attempts of each move, with messages and raw answers.
    turns = models.JSONField(default=list)
    moves = models.PositiveIntegerField(default=0)
    requests = models.PositiveIntegerField(default=0)
    illegal = models.PositiveIntegerField(default=0)
    unparseable = models.PositiveIntegerField(default=0)
    too_long = models.PositiveIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0)
    provider_retries = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    #: Each move's latency (ms), for the median.
    latencies_ms = models.JSONField(default=list)
    #: The match ended by a fault charged to this player.
    forfeited = models.BooleanField(default=False)

    class Meta:
        ordering = ["match", "player"]
        constraints = one_per_player_of_match("conversation")

    def __str__(self) -> str:
        return f"{self.model} as player {self.player} in {self.match}"
