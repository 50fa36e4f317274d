"""Forms: each refuses bad input with a message that says what to fix."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import password_validation
from django.contrib.auth.forms import AuthenticationForm
from django.core.files.uploadedfile import UploadedFile
from django.core.validators import RegexValidator, URLValidator, validate_slug

from core.models import InviteCode, TokenScope, User
from core.models import llm as llm_limits
from core.models.submissions import PUBLIC_BY_DEFAULT
from core.secrets import SECRET_REF_HELP, SECRET_REF_PATTERN
from core.services.accounts import invite_problem
from core.services.uploads import upload_limits


def competitor_name_field(label: str, help_text: str) -> forms.CharField:
    """A competitor's name, as its URL and the leaderboard show it (surrounding spaces are
    dropped, as by any ``CharField``)."""
    return forms.CharField(
        label=label, max_length=64, validators=[validate_slug], help_text=help_text
    )


class UploadForm(forms.Form):
    """A new revision: a single ``.py`` file or a ``.zip`` archive."""

    file = forms.FileField(
        help_text="A single .py file, or a .zip with main.py, agent.py or an executable "
        "named agent at its top.",
        widget=forms.ClearableFileInput(attrs={"accept": ".py,.zip"}),
    )

    def clean_file(self) -> UploadedFile:
        upload: UploadedFile = self.cleaned_data["file"]
        name = (upload.name or "").lower()
        if not name.endswith((".py", ".zip")):
            raise forms.ValidationError("Upload a single .py file or a .zip archive.")
        limit = upload_limits().max_upload_bytes
        # Checked before reading, so an oversized upload is never loaded into memory.
        if upload.size is not None and upload.size > limit:
            raise forms.ValidationError(
                f"The file is {upload.size:,} bytes; at most {limit:,} are allowed."
            )
        return upload

    def content(self) -> bytes:
        upload: UploadedFile = self.cleaned_data["file"]
        upload.seek(0)
        return upload.read()


class SubmissionForm(UploadForm):
    """A first upload from the environment page: names the competitor too."""

    name = competitor_name_field(
        "Competitor name",
        "Letters, digits, hyphens and underscores; a name you already use adds a new revision "
        "to that competitor.",
    )
    is_public = forms.BooleanField(
        label="Public",
        required=False,
        help_text="Anyone may then see its code (its logs only if you share them). Applies "
        "when the competitor is created.",
    )

    field_order = ["name", "is_public", "file"]


class CompetitionUploadForm(UploadForm):
    """An agent's upload to a competition: its name, then its file (kept private)."""

    name = competitor_name_field(
        "Competitor name",
        "Letters, digits, hyphens and underscores; a name your team uses adds a new revision "
        "to that agent.",
    )

    field_order = ["name", "file"]


class TeamForm(forms.Form):
    name = forms.CharField(label="Team name", max_length=80)


class InvitationForm(forms.Form):
    email = forms.EmailField(
        label="E-mail address",
        required=False,
        help_text="Only that person may accept it; leave it empty for a link anyone may use once.",
    )


class JoinForm(forms.Form):
    code = forms.CharField(
        label="Invitation code",
        max_length=64,
        help_text="The part of the link after the #: the page fills it in for you.",
    )


class MoveLogsForm(forms.Form):
    """Its owner's choice: whether everyone may read its agent's logs (``can_see_logs``)."""

    prefix = "logs"  # beside the upload form on the competitor page

    share_logs = forms.BooleanField(
        label="Share its logs",
        required=False,
        help_text="Once a duel or an evaluation is over, anyone may read what its agent "
        "wrote on stderr (the whole log, at each move of the replays, its validation's) or an "
        "LLM player's conversations, while the competitor is public. Off: only you and the "
        "organizers.",
    )


class OnlineModelForm(forms.Form):
    """An online model: an agent that plays from its owner's machine over the network."""

    prefix = "online"  # beside the upload form on the environment page

    name = competitor_name_field(
        "Model name", "Its name on the leaderboard: letters, digits, hyphens and underscores."
    )
    is_public = forms.BooleanField(
        label="Public",
        required=False,
        initial=PUBLIC_BY_DEFAULT,
        help_text="Anyone may then see its page (its name and games show either way).",
    )


class EmailAuthenticationForm(AuthenticationForm):
    """Log in with the e-mail address, in any case (addresses are stored in lower case)."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "The e-mail address or the password is wrong. Try again, or reset "
        "your password.",
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["username"].label = "E-mail address"

    def clean_username(self) -> str:
        return self.cleaned_data["username"].strip().lower()


class RegistrationForm(forms.Form):
    invite_code = forms.CharField(max_length=64, help_text="The code the organizers gave you.")
    email = forms.EmailField(label="E-mail address")
    display_name = forms.CharField(max_length=80, help_text="Shown on leaderboards.")
    team = forms.CharField(max_length=80, required=False)
    password1 = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )
    password2 = forms.CharField(
        label="Password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean_invite_code(self) -> str:
        code = self.cleaned_data["invite_code"].strip()
        problem = invite_problem(InviteCode.objects.filter(code=code).first())
        if problem:
            raise forms.ValidationError(problem)
        return code

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip().lower()
        if User.objects.filter(email__iexact=email).exists():
            raise forms.ValidationError(
                "An account with this e-mail address exists already; log in, or reset "
                "your password."
            )
        return email

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        first, second = cleaned.get("password1"), cleaned.get("password2")
        if first and second and first != second:
            self.add_error("password2", "The two passwords differ.")
        elif first:
            candidate = User(
                email=cleaned.get("email", ""), display_name=cleaned.get("display_name", "")
            )
            try:
                password_validation.validate_password(first, candidate)
            except forms.ValidationError as error:
                self.add_error("password1", error)
        return cleaned


class ProfileForm(forms.ModelForm):
    class Meta:
        model = User
        fields = ["display_name", "team"]
        help_texts = {"display_name": "Shown on leaderboards."}


class TokenForm(forms.Form):
    name = forms.CharField(
        label="New token's name",
        max_length=80,
        help_text="What the token is for, e.g. 'laptop' or 'ci'.",
    )
    scopes = forms.MultipleChoiceField(
        label="It may",
        choices=TokenScope.choices,
        initial=[TokenScope.READ],
        widget=forms.CheckboxSelectMultiple,
        help_text="Read: what you may see. Submit agents: upload and delete your "
        "submissions. Play online: connect agents that play over the network.",
    )


def _between(bounds: tuple[Any, Any]) -> dict[str, Any]:
    """A number field's ``min_value`` and ``max_value``: the model's range for it."""
    return {"min_value": bounds[0], "max_value": bounds[1]}


class LLMSettingsForm(forms.Form):
    """What an LLM player plays with; its owner changes these on its page."""

    prefix = "llm"  # beside the upload and online forms on the environment page

    base_url = forms.URLField(
        label="Base URL",
        max_length=500,
        assume_scheme="http",
        validators=[URLValidator(schemes=["http", "https"])],
        help_text="Of an OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, a hosted "
        "API), e.g. <code>http://127.0.0.1:8000/v1</code>.",
    )
    model = forms.CharField(
        max_length=llm_limits.MODEL_NAME_MAX,
        validators=[RegexValidator(llm_limits.MODEL_NAME_PATTERN, "Printable characters only.")],
        help_text="The model's name as the server knows it.",
    )
    api_key = forms.CharField(
        label="API key",
        required=False,
        max_length=1000,
        strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "off"}, render_value=False),
        help_text="Stored encrypted and never shown again. Leave empty for a server without "
        "keys, or give a secret reference below.",
    )
    api_key_ref = forms.CharField(
        label="Or a secret reference",
        required=False,
        max_length=300,
        validators=[RegexValidator(SECRET_REF_PATTERN, f"Write {SECRET_REF_HELP}.")],
        help_text=f"{SECRET_REF_HELP}: the key is read there when it plays.",
    )
    temperature = forms.FloatField(required=False, **_between(llm_limits.TEMPERATURE_RANGE))
    top_p = forms.FloatField(label="Top p", required=False, **_between(llm_limits.TOP_P_RANGE))
    max_tokens = forms.IntegerField(
        label="Max tokens per answer", initial=512, **_between(llm_limits.MAX_TOKENS_RANGE)
    )
    request_timeout = forms.FloatField(
        label="Request timeout (seconds)",
        initial=60,
        **_between(llm_limits.REQUEST_TIMEOUT_RANGE),
        help_text="A longer wait counts as the server's failure (retried, then the duel "
        "ends unscored), never as the model's.",
    )
    seed = forms.IntegerField(
        required=False, min_value=-(2**63), max_value=2**63 - 1, help_text="Sent if set."
    )
    is_public = forms.BooleanField(
        label="Public",
        required=False,
        initial=PUBLIC_BY_DEFAULT,
        help_text="Anyone may then see it and its settings (never its key); its conversations "
        "too once you share its logs on its page.",
    )

    def __init__(self, *args: Any, has_key: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.has_key = has_key
        if has_key:
            self.fields[
                "api_key"
            ].help_text = "A key is stored; leave empty to keep it. A new key replaces it."

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("api_key") and cleaned.get("api_key_ref"):
            self.add_error("api_key_ref", "Give the key or a reference to it, not both.")
        return cleaned


class LLMPlayerForm(LLMSettingsForm):
    """A new LLM player, from the environment page."""

    name = competitor_name_field(
        "Player name", "Its name on the leaderboard: letters, digits, hyphens and underscores."
    )

    field_order = ["name", "base_url", "model", "api_key", "api_key_ref"]
