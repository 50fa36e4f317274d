"""What every Arena admin page shares: organizer-only access, links, status badges, and
service errors shown as messages."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from django.contrib import admin, messages
from django.contrib.admin.utils import flatten, flatten_fieldsets
from django.db import models
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from core.errors import ArenaError
from core.models import User

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldGroups

    #: What ModelAdmin.get_fields returns: names, or tuples of names shown on one line.
    FieldGroups: TypeAlias = _FieldGroups

EMPTY = "—"

#: Status values (of revisions' steps, duels and tournaments) -> colour and icon.
_STATUS_STYLE = {
    "succeeded": ("#1a7f37", "✔"),
    "completed": ("#1a7f37", "✔"),
    "failed": ("#cf222e", "✘"),
    "running": ("#0969da", "▶"),
    "queued": ("#9a6700", "…"),
    "draft": ("#6e7781", "✎"),
    "cancelled": ("#6e7781", "■"),
    "none": ("#8c959f", "·"),
}


def acting_user(request: HttpRequest) -> User:
    """The user of an admin request: the admin site lets no one else in (it requires a
    signed-in staff member)."""
    user = request.user
    assert isinstance(user, User)
    return user


def is_organizer(request: HttpRequest) -> bool:
    user = request.user
    return bool(user.is_active and user.is_staff and getattr(user, "is_organizer", False))


class OrganizerPermissions:
    """Organizers (role organizer, or superusers) manage everything the admin shows.

    Model permissions are not used: the role is what gives access, so making someone an
    organizer is one step. Set ``can_add``/``can_change``/``can_delete`` per admin.
    """

    can_add = True
    can_change = True
    can_delete = False

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_organizer(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_organizer(request)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return self.can_add and is_organizer(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.can_change and is_organizer(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.can_delete and is_organizer(request)


class SelectedUpdates(admin.ModelAdmin):
    """Actions that write the same values to every selected row (the users' admin has
    Django's own base, so this is not in ``ArenaAdmin``)."""

    def update_selected(
        self, request: HttpRequest, queryset: models.QuerySet[Any], *, done: str, **values: Any
    ) -> int:
        """Write ``values`` to every selected row in one query and say how many, as
        "3 revision(s) disabled." for ``done="disabled"``. Returns how many."""
        count = queryset.update(**values)
        noun = queryset.model._meta.verbose_name
        self.message_user(request, f"{count} {noun}(s) {done}.", messages.SUCCESS)
        return count


class ArenaAdmin(OrganizerPermissions, SelectedUpdates):
    list_per_page = 50

    def view_on_site(self, obj: models.Model) -> str | None:
        return public_url(obj)

    def run_each(
        self,
        request: HttpRequest,
        objects: Iterable[Any],
        operation: Callable[[Any], str | None],
        *,
        done: str,
    ) -> int:
        """Apply ``operation`` to each object; an ArenaError becomes an error message.

        ``operation`` may return a note shown for that object. Returns how many succeeded.
        """
        succeeded = 0
        for obj in objects:
            try:
                note = operation(obj)
            except ArenaError as error:
                self.message_user(request, f"{obj}: {error.message}", messages.ERROR)
                continue
            succeeded += 1
            if note:
                self.message_user(request, f"{obj}: {note}", messages.INFO)
        if succeeded:
            self.message_user(request, f"{done}: {succeeded}", messages.SUCCESS)
        return succeeded


class ReadOnlyAdmin(ArenaAdmin):
    """Rows written only by services: organizers look, and act through actions."""

    can_add = False
    can_change = False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # Every field it shows, the computed ones included: nothing is edited here.
        if self.fieldsets:
            return flatten_fieldsets(self.fieldsets)
        return flatten(self.fields or ())


class ReadOnlyInline(OrganizerPermissions, admin.TabularInline):
    can_add = False
    can_change = False
    extra = 0
    show_change_link = True

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return flatten(self.fields or ())


def admin_url(obj: models.Model) -> str:
    meta = obj._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])


def admin_link(obj: models.Model | None, label: object = None) -> str:
    if obj is None:
        return EMPTY
    return format_html('<a href="{}">{}</a>', admin_url(obj), obj if label is None else label)


def admin_changelist_link(model: type[models.Model], label: str, **filters: object) -> str:
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    query = "&".join(f"{name}={value}" for name, value in filters.items())
    return format_html('<a href="{}?{}">{}</a>', url, query, label)


def public_url(obj: models.Model) -> str | None:
    """The public page of ``obj``, or None while the website does not have that page."""
    get_absolute_url = getattr(obj, "get_absolute_url", None)
    if get_absolute_url is None:
        return None
    try:
        return get_absolute_url()
    except NoReverseMatch:
        return None


def public_link(obj: models.Model, label: str = "view ↗") -> str:
    url = public_url(obj)
    if url is None:
        return EMPTY
    return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', url, label)


def status_badge(value: str, label: str) -> SafeString:
    colour, icon = _STATUS_STYLE.get(value, ("inherit", ""))
    return format_html('<span style="color:{};font-weight:600">{} {}</span>', colour, icon, label)


def preformatted(text: str) -> str:
    if not text:
        return EMPTY
    return format_html(
        '<pre style="white-space:pre-wrap;max-height:32em;overflow:auto;margin:0">{}</pre>', text
    )


def pretty_json(value: object) -> str:
    return preformatted(json.dumps(value, indent=1, ensure_ascii=False))


def seconds(value: float | None) -> str:
    return EMPTY if value is None else f"{value:.1f} s"
