"""The admin of environments: built-in games imported from their folders, OpenSpiel games
added by spec, uploads opened and closed, and the leaderboard refitted now."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from core.admin.base import (
    ArenaAdmin,
    admin_changelist_link,
    public_link,
)
from core.errors import ArenaError
from core.models import Competitor, Environment
from core.services.environments import (
    OPENSPIEL_LIMITS,
    environment_openspiel_values,
    environments_import,
)
from environments.registry import environment_names
from tournament_manager.leaderboard import leaderboard_refit


class OpenSpielEnvironmentForm(forms.ModelForm):
    """Adds an OpenSpiel game by its spec; every limit left empty is the game's default
    (``environments/openspiel/games.yml``)."""

    spec = forms.CharField(
        max_length=200,
        help_text="The game and its parameters, e.g. openspiel:chess, "
        "openspiel:go(board_size=9), openspiel:leduc_poker, openspiel:backgammon.",
    )
    players = forms.IntegerField(
        required=False,
        label="Seats",
        help_text="How many play: empty for the game's own count (the spec's). 3 to 6 for a "
        "game OpenSpiel plays with more, e.g. kuhn_poker, leduc_poker, goofspiel, oh_hell: "
        "set through the game's own parameter (openspiel:kuhn_poker(players=3)).",
    )
    name = forms.SlugField(
        max_length=64,
        required=False,
        help_text="Its address on the site; empty: made from the spec (go_board_size_9).",
    )
    title = forms.CharField(
        max_length=120, required=False, help_text="Empty: the game's name (Go (board_size=9))."
    )
    matches_per_duel = forms.IntegerField(required=False, min_value=1)
    ladder_matches_per_duel = forms.IntegerField(required=False, min_value=1)
    validation_matches = forms.IntegerField(required=False, min_value=1)
    move_time = forms.FloatField(required=False, min_value=0.01, help_text="Seconds.")
    time_bank = forms.FloatField(required=False, min_value=0.01, help_text="Seconds a match.")
    startup_time = forms.FloatField(required=False, min_value=0.01, help_text="Seconds.")
    memory_mb = forms.IntegerField(required=False, min_value=16, help_text="MiB an agent.")
    cpu_seconds = forms.IntegerField(required=False, min_value=1, help_text="A duel.")

    class Meta:
        model = Environment
        fields = ("spec", "players", "name", "title", *OPENSPIEL_LIMITS)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        try:
            values = environment_openspiel_values(
                spec=cleaned["spec"],
                name=cleaned.get("name") or "",
                title=cleaned.get("title") or "",
                limits={key: cleaned.get(key) for key in OPENSPIEL_LIMITS},
                players=cleaned.get("players"),
            )
        except ArenaError as error:
            raise forms.ValidationError(error.message) from None
        for key, value in values.items():
            setattr(self.instance, key, value)
        cleaned.update(values)
        return cleaned


#: What an organizer may change on an OpenSpiel game (a built-in game's limits are its
#: file's); its spec never changes, so that its matches keep replaying.
OPENSPIEL_EDITABLE = {"name", "title", "is_active", "standing_competition", *OPENSPIEL_LIMITS}


class OpenSpielEnvironmentChangeForm(forms.ModelForm):
    class Meta:
        model = Environment
        fields = tuple(OPENSPIEL_EDITABLE)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if name != self.instance.name and name in environment_names():
            raise forms.ValidationError(f"{name!r} is the name of a built-in game.")
        return name


@admin.register(Environment)
class EnvironmentAdmin(ArenaAdmin):
    # Built-in games come from environments/<name>/info.yml; OpenSpiel games are added here.
    add_form = OpenSpielEnvironmentForm
    add_fieldsets = (
        (None, {"fields": ("spec", "players", "name", "title")}),
        ("Limits (empty: the game's default)", {"fields": OPENSPIEL_LIMITS}),
    )
    list_display = (
        "title",
        "name",
        "spec",
        "is_active",
        "standing_competition",
        "players",
        *OPENSPIEL_LIMITS,
        "competitor_count",
        "new_tournament",
        "public",
    )
    list_filter = ("is_active", "standing_competition", "players")
    search_fields = ("name", "spec", "title")
    readonly_fields = (
        "name",
        "spec",
        "title",
        "description",
        "rules",
        "players",
        *OPENSPIEL_LIMITS,
        "imported_at",
    )
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "spec",
                    "title",
                    "is_active",
                    "standing_competition",
                    "description",
                    "rules",
                )
            },
        ),
        (
            "Limits (a built-in game's come from its info.yml: edit the file and re-import; "
            "an OpenSpiel game's are edited here)",
            {"fields": ("players", *OPENSPIEL_LIMITS, "imported_at")},
        ),
    )
    actions = ("reimport", "open_uploads", "close_uploads", "refit_leaderboards")

    def get_form(
        self,
        request: HttpRequest,
        obj: Environment | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = self.add_form
        elif obj.spec:
            kwargs["form"] = OpenSpielEnvironmentChangeForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: Environment | None = None) -> Any:
        return self.add_fieldsets if obj is None else self.fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Environment | None = None) -> Any:
        if obj is None:
            return ()
        if obj.spec:
            return tuple(field for field in self.readonly_fields if field not in OPENSPIEL_EDITABLE)
        return self.readonly_fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Environment]:
        return super().get_queryset(request).annotate(competitors_count=Count("competitors"))

    @admin.display(description="competitors", ordering="competitors_count")
    def competitor_count(self, environment: Environment) -> str:
        count = environment.competitors_count  # type: ignore[attr-defined]
        return admin_changelist_link(Competitor, str(count), environment__id__exact=environment.pk)

    @admin.display(description="tournament")
    def new_tournament(self, environment: Environment) -> str:
        url = reverse("admin:core_tournament_add") + f"?environment={environment.pk}"
        return format_html('<a href="{}">new…</a>', url)

    @admin.display(description="public page")
    def public(self, environment: Environment) -> str:
        return public_link(environment)

    @admin.action(description="Re-import every environment from its info.yml")
    def reimport(self, request: HttpRequest, queryset: QuerySet[Environment]) -> None:
        try:
            imported = environments_import()
        except (ArenaError, ValueError, LookupError) as error:
            self.message_user(request, f"Import failed: {error}", messages.ERROR)
            return
        names = ", ".join(environment.name for environment in imported)
        self.message_user(
            request, f"Imported {len(imported)} environment(s): {names}.", messages.SUCCESS
        )

    @admin.action(description="Open to uploads")
    def open_uploads(self, request: HttpRequest, queryset: QuerySet[Environment]) -> None:
        self.update_selected(request, queryset, is_active=True, done="open to uploads")

    @admin.action(description="Close to uploads")
    def close_uploads(self, request: HttpRequest, queryset: QuerySet[Environment]) -> None:
        self.update_selected(request, queryset, is_active=False, done="closed to uploads")

    @admin.action(description="Refit the leaderboard now")
    def refit_leaderboards(self, request: HttpRequest, queryset: QuerySet[Environment]) -> None:
        # The tournament manager refits on its next pass anyway; this is for an organizer
        # who wants to see it at once, or who changed ARENA_LEADERBOARD_* settings.
        for environment in queryset:
            leaderboard_refit(environment=environment, force=True)
        names = ", ".join(environment.name for environment in queryset)
        self.message_user(request, f"Leaderboard refitted: {names}.", messages.SUCCESS)
