"""The admin of LLM players (organizers register and edit them, and set their prices) and
of their conversations (read only).

The API key is a write-only field: the form never shows it, a blank one keeps the stored
key. Registration and changes go through ``core.services.llm``'s services, so a change of what plays
makes a new revision as it does on the site.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.validators import URLValidator, validate_slug
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin.base import (
    ArenaAdmin,
    ReadOnlyAdmin,
    acting_user,
    admin_link,
    pretty_json,
    public_link,
)
from core.models import Competitor, Environment, LLMPlayer, MatchConversation, User
from core.models.llm import PLAYING_FIELDS, SUMMARY_COUNTERS
from core.services.llm import PRICE_FIELDS, llm_player_register, llm_player_update, llm_settings

#: What plays, the key, and the prices.
_SETTINGS = (*PLAYING_FIELDS, "api_key", "api_key_ref", *PRICE_FIELDS)


class LLMPlayerChangeForm(forms.ModelForm):
    base_url = forms.URLField(
        label="Base URL",
        max_length=500,
        assume_scheme="http",
        validators=[URLValidator(schemes=["http", "https"])],
        help_text="An OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.",
    )
    api_key = forms.CharField(
        label="API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "off"}, render_value=False),
        help_text="Write-only: stored encrypted, never shown. Leave empty to keep the stored "
        "key (if any).",
    )

    class Meta:
        model = LLMPlayer
        fields = [field for field in _SETTINGS if field != "api_key"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("api_key") and cleaned.get("api_key_ref"):
            self.add_error("api_key_ref", "Give the key or a reference to it, not both.")
        return cleaned


class LLMPlayerAddForm(LLMPlayerChangeForm):
    """A new LLM player: the competitor it makes, and its owner."""

    owner = forms.ModelChoiceField(User.objects.order_by("email"))
    environment = forms.ModelChoiceField(Environment.objects.filter(is_active=True))
    name = forms.CharField(max_length=64, validators=[validate_slug])
    is_public = forms.BooleanField(required=False, initial=True)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        environment, name = cleaned.get("environment"), cleaned.get("name")
        if (
            environment
            and name
            and Competitor.objects.filter(environment=environment, name=name).exists()
        ):
            self.add_error("name", f"The name {name!r} is taken in {environment.title}.")
        return cleaned


@admin.register(LLMPlayer)
class LLMPlayerAdmin(ArenaAdmin):
    list_display = (
        "competitor_link",
        "environment",
        "model",
        "base_url",
        "key",
        "harness_version",
        "price_input_per_million",
        "price_output_per_million",
        "updated_at",
        "public",
    )
    list_filter = ("competitor__environment", "harness_version")
    search_fields = ("competitor__name", "model", "base_url", "competitor__owner__email")
    list_select_related = ("competitor__environment", "competitor__owner")
    readonly_fields = ("competitor_link", "key", "created_at", "updated_at")

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Any]]:
        kwargs["form"] = LLMPlayerAddForm if obj is None else LLMPlayerChangeForm
        kwargs["fields"] = None  # the form's own fields
        return super().get_form(request, obj, change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return [
                ("Competitor", {"fields": ("owner", "environment", "name", "is_public")}),
                ("Model", {"fields": _SETTINGS}),
            ]
        return [
            ("Competitor", {"fields": ("competitor_link", "key", "created_at", "updated_at")}),
            ("Model", {"fields": _SETTINGS}),
        ]

    def save_model(self, request: HttpRequest, obj: LLMPlayer, form: Any, change: bool) -> None:
        settings = form.cleaned_data
        prices = {name: settings[name] for name in PRICE_FIELDS}
        if change:
            llm_player_update(
                competitor=obj.competitor,
                changed_by=acting_user(request),
                **llm_settings(settings),
                **prices,
            )
            obj.refresh_from_db()
            return
        competitor = llm_player_register(
            owner=settings["owner"],
            environment=settings["environment"],
            name=settings["name"],
            **llm_settings(settings),
        )
        llm_player_update(competitor=competitor, changed_by=acting_user(request), **prices)
        registered = competitor.llm
        # The admin goes on with ``obj`` (its message, its log entry): make it the row.
        obj.pk, obj.competitor = registered.pk, competitor
        obj.refresh_from_db()

    @admin.display(description="competitor", ordering="competitor__name")
    def competitor_link(self, player: LLMPlayer) -> str:
        return admin_link(player.competitor)

    @admin.display(description="environment", ordering="competitor__environment__name")
    def environment(self, player: LLMPlayer) -> str:
        return player.competitor.environment.name

    @admin.display(description="API key")
    def key(self, player: LLMPlayer) -> str:
        if player.api_key_ref:
            return f"reference {player.api_key_ref}"
        return "stored (encrypted)" if player.api_key_encrypted else "none"

    @admin.display(description="public page")
    def public(self, player: LLMPlayer) -> str:
        return public_link(player.competitor)


@admin.register(MatchConversation)
class MatchConversationAdmin(ReadOnlyAdmin):
    list_display = (
        "match_link",
        "player",
        "competitor_link",
        "model",
        "moves",
        "requests",
        "illegal",
        "unparseable",
        "retries",
        "forfeited",
        "prompt_tokens",
        "completion_tokens",
    )
    list_filter = ("model", "forfeited", "harness_version")
    search_fields = ("model", "competitor__name")
    list_select_related = ("match__duel", "competitor")
    fields = (
        "match_link",
        "player",
        "competitor_link",
        "model",
        "harness_version",
        "harness_hash",
        *SUMMARY_COUNTERS,
        "forfeited",
        "latencies",
        "turns_pretty",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[MatchConversation]:
        return super().get_queryset(request).select_related("match__duel", "competitor")

    @admin.display(description="match")
    def match_link(self, conversation: MatchConversation) -> str:
        return admin_link(conversation.match)

    @admin.display(description="competitor")
    def competitor_link(self, conversation: MatchConversation) -> str:
        return admin_link(conversation.competitor)

    @admin.display(description="latencies (ms)")
    def latencies(self, conversation: MatchConversation) -> str:
        return pretty_json(conversation.latencies_ms)

    @admin.display(description="turns")
    def turns_pretty(self, conversation: MatchConversation) -> str:
        return pretty_json(conversation.turns)
