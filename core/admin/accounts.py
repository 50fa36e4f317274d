"""Users (e-mail login, roles), invite codes and API tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, PasswordResetForm, UserChangeForm
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.template import TemplateDoesNotExist
from django.template.loader import get_template
from django.urls import NoReverseMatch
from django.utils import timezone

from core.admin.base import (
    ArenaAdmin,
    OrganizerPermissions,
    ReadOnlyAdmin,
    SelectedUpdates,
    acting_user,
    admin_changelist_link,
    admin_link,
)
from core.models import ApiToken, Competitor, InviteCode, Role, User

if TYPE_CHECKING:
    from core.admin.base import FieldGroups


class ResetTemplates(TypedDict, total=False):
    """Arguments of ``PasswordResetForm.save``: its e-mail's templates."""

    email_template_name: str
    subject_template_name: str


#: The website's wording for the password reset e-mail, used once the website has it.
WEB_RESET_TEMPLATES: ResetTemplates = {
    "email_template_name": "web/accounts/password_reset_email.txt",
    "subject_template_name": "web/accounts/password_reset_subject.txt",
}


def _reset_templates() -> ResetTemplates:
    try:
        get_template(WEB_RESET_TEMPLATES["email_template_name"])
        get_template(WEB_RESET_TEMPLATES["subject_template_name"])
    except TemplateDoesNotExist:
        return {}
    return WEB_RESET_TEMPLATES


def _clean_email(form: forms.ModelForm) -> str:
    email = User.objects.normalize_email(form.cleaned_data["email"]).lower()
    taken = User.objects.filter(email__iexact=email).exclude(pk=form.instance.pk)
    if taken.exists():
        raise forms.ValidationError("A user with this e-mail address already exists.")
    return email


class UserCreateForm(AdminUserCreationForm):
    class Meta:
        model = User
        fields = ("email", "display_name", "role", "team")

    def clean_email(self) -> str:
        return _clean_email(self)


class UserEditForm(UserChangeForm):
    class Meta:
        model = User
        fields = "__all__"

    def clean_email(self) -> str:
        return _clean_email(self)


@admin.register(User)
class UserAdmin(OrganizerPermissions, SelectedUpdates, DjangoUserAdmin):
    form = UserEditForm
    add_form = UserCreateForm
    can_delete = True
    list_display = (
        "email",
        "display_name",
        "role",
        "team",
        "is_staff",
        "is_active",
        "competitors",
        "last_login",
        "date_joined",
    )
    list_filter = ("role", "is_staff", "is_superuser", "is_active", "team")
    search_fields = ("email", "display_name", "team")
    ordering = ("email",)
    filter_horizontal = ("groups", "user_permissions")
    readonly_fields = ("is_staff", "last_login", "date_joined")
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Profile", {"fields": ("display_name", "team")}),
        (
            "Access",
            {
                "fields": ("role", "is_staff", "is_active", "is_superuser"),
                "description": "Organizers may use this admin: the role sets “staff status”.",
            },
        ),
        (
            "Django permissions",
            {"classes": ("collapse",), "fields": ("groups", "user_permissions")},
        ),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = (
        (
            None,
            {
                "classes": ("wide",),
                "fields": (
                    "email",
                    "display_name",
                    "role",
                    "team",
                    "usable_password",
                    "password1",
                    "password2",
                ),
            },
        ),
    )
    actions = ("make_organizer", "make_attendee", "send_password_reset")

    def get_queryset(self, request: HttpRequest) -> QuerySet[User]:
        return super().get_queryset(request).annotate(competitor_count=Count("competitors"))

    @admin.display(description="competitors", ordering="competitor_count")
    def competitors(self, user: User) -> str:
        count = user.competitor_count  # type: ignore[attr-defined]
        if not count:
            return "0"
        return admin_changelist_link(Competitor, str(count), owner__id__exact=user.pk)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            # Only a superuser makes superusers or hands out raw Django permissions.
            fields += ["is_superuser", "groups", "user_permissions"]
        return fields

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: User, form: forms.Form, change: bool) -> None:
        if not change or "role" in form.changed_data:
            obj.admin_access_from_role()
        super().save_model(request, obj, form, change)

    @admin.action(description="Make organizer (may use the admin)")
    def make_organizer(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self.update_selected(
            request, queryset, role=Role.ORGANIZER, is_staff=True, done="are organizers now"
        )

    @admin.action(description="Make attendee (no admin access)")
    def make_attendee(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        user = acting_user(request)
        if queryset.filter(pk=user.pk).exists():
            self.message_user(
                request, "You cannot take your own organizer role; skipped.", messages.WARNING
            )
            queryset = queryset.exclude(pk=user.pk)
        if not user.is_superuser:
            queryset = queryset.exclude(is_superuser=True)
        self.update_selected(request, queryset, role=Role.ATTENDEE, done="are attendees now")
        queryset.filter(is_superuser=False).update(is_staff=False)

    @admin.action(description="Send a password reset e-mail")
    def send_password_reset(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        sent, skipped = [], []
        for user in queryset:
            if not (user.is_active and user.has_usable_password()):
                skipped.append(user.email)
                continue
            form = PasswordResetForm(data={"email": user.email})
            if not form.is_valid():
                skipped.append(user.email)
                continue
            try:
                form.save(request=request, use_https=request.is_secure(), **_reset_templates())
            except NoReverseMatch:
                self.message_user(
                    request,
                    "The website has no password reset page yet (URL "
                    "'password_reset_confirm'); no e-mail was sent.",
                    messages.ERROR,
                )
                return
            sent.append(user.email)
        if sent:
            self.message_user(
                request, f"Password reset e-mail sent to {', '.join(sent)}.", messages.SUCCESS
            )
        if skipped:
            self.message_user(
                request,
                f"Not sent (inactive, or no password login): {', '.join(skipped)}.",
                messages.WARNING,
            )


@admin.register(InviteCode)
class InviteCodeAdmin(ArenaAdmin):
    can_delete = True
    list_display = (
        "code",
        "note",
        "uses",
        "expires_at",
        "is_active",
        "usable",
        "created_by_link",
        "created_at",
    )
    list_filter = ("is_active",)
    search_fields = ("code", "note")
    readonly_fields = ("used_count", "created_by_link", "created_at")
    fields = ("code", "note", "max_uses", "used_count", "expires_at", "is_active")
    actions = ("deactivate",)

    @admin.display(description="uses", ordering="used_count")
    def uses(self, invite: InviteCode) -> str:
        return f"{invite.used_count} / {invite.max_uses}"

    @admin.display(description="usable now", boolean=True)
    def usable(self, invite: InviteCode) -> bool:
        return invite.is_usable()

    @admin.display(description="created by")
    def created_by_link(self, invite: InviteCode) -> str:
        return admin_link(invite.created_by)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> FieldGroups:
        fields = list(super().get_fields(request, obj))
        return [*fields, "created_by_link", "created_at"] if obj else fields

    def save_model(
        self, request: HttpRequest, obj: InviteCode, form: forms.Form, change: bool
    ) -> None:
        if not change:
            obj.created_by = acting_user(request)
        super().save_model(request, obj, form, change)

    @admin.action(description="Deactivate")
    def deactivate(self, request: HttpRequest, queryset: QuerySet[InviteCode]) -> None:
        self.update_selected(request, queryset, is_active=False, done="deactivated")


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    list_display = ("name", "user_link", "hint", "active", "created_at", "last_used_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "hint", "user__email", "user__display_name")
    list_select_related = ("user",)
    # Never token_hash: the secret was shown once to its owner and is nobody else's.
    fields = ("name", "user_link", "hint", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke",)

    @admin.display(description="user", ordering="user__email")
    def user_link(self, token: ApiToken) -> str:
        return admin_link(token.user, token.user.email)

    @admin.display(description="active", boolean=True)
    def active(self, token: ApiToken) -> bool:
        return token.is_active

    @admin.action(description="Revoke")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = queryset.active().update(revoked_at=timezone.now())  # type: ignore[attr-defined]
        self.message_user(request, f"{count} token(s) revoked.", messages.SUCCESS)
