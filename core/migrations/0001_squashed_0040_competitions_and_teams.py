"""Every migration from 0001 to 0040 in one: the schema the models had at 0040, as a new
database gets it, each model's constraints and indexes in its ``CreateModel`` (Django
re-renders its state of the models after each operation: ``migrate`` of a new database
took 18 s through the 40 files, 4.4 s through this one).

A database that has applied all of 0001-0040, or none, takes this one; a database part of
the way (an old deployment) goes on through the original files, which stay until every
deployment is past 0040. The data migrations among them (uploads copied into the
database, jobs made from rows...) have nothing to change in an empty database, so none
is repeated here. ``tests/core/test_squashed_migration.py`` checks that this schema is the
one the original migrations make.
"""

import re
from decimal import Decimal

import django.core.validators
import django.db.models.deletion
import django.db.models.functions.text
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import core.models.accounts
import core.models.scores
import core.models.submissions
import core.models.tournaments


class Migration(migrations.Migration):
    replaces = [
        ("core", "0001_initial"),
        ("core", "0002_revision_image"),
        ("core", "0003_tournament_rounds_and_entries"),
        ("core", "0004_pipeline_leases"),
        ("core", "0005_participant_buchholz"),
        ("core", "0006_environment_ladder_matches"),
        ("core", "0007_leaderboard_entries"),
        ("core", "0008_api_token_scopes"),
        ("core", "0009_online_play"),
        ("core", "0010_llm_players"),
        ("core", "0011_llm_key_reference_rule"),
        ("core", "0012_uploads_in_database"),
        ("core", "0013_copy_uploads_into_database"),
        ("core", "0014_duel_played_by"),
        ("core", "0015_environment_openspiel_spec"),
        ("core", "0016_duel_live_events"),
        ("core", "0017_competitor_kind_human"),
        ("core", "0018_duels_of_more_than_two_players"),
        ("core", "0019_score_competitions"),
        ("core", "0020_online_presence_is_the_stream"),
        ("core", "0021_jobs"),
        ("core", "0022_duel_and_evaluation_lifecycle_in_jobs"),
        ("core", "0023_revision_steps_in_jobs"),
        ("core", "0024_revision_step_columns_removed"),
        ("core", "0025_duel_seats"),
        ("core", "0026_duel_seats_from_columns"),
        ("core", "0027_duel_seat_columns_removed"),
        ("core", "0028_llm_seats_of_any_number"),
        ("core", "0029_move_logs"),
        ("core", "0030_score_competition_entries"),
        ("core", "0031_ladder_counters"),
        ("core", "0032_fit_cadence"),
        ("core", "0033_rated_pairings"),
        ("core", "0034_duel_and_evaluation_times_in_jobs"),
        ("core", "0035_competitor_disabled_by"),
        ("core", "0036_duel_requested_by"),
        ("core", "0037_standing_competitions"),
        ("core", "0038_leaderboard_points"),
        ("core", "0039_match_opening"),
        ("core", "0040_competitions_and_teams"),
    ]

    initial = True

    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.CreateModel(
            name="Evaluation",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("is_validation", models.BooleanField(default=False)),
                ("seeds", models.JSONField(default=list)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                            ("cancelled", "Cancelled"),
                        ],
                        default="queued",
                        max_length=16,
                    ),
                ),
                ("played_by", models.CharField(blank=True, max_length=120)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("ended_at", models.DateTimeField(blank=True, null=True)),
                ("error", models.TextField(blank=True)),
                ("mean_return", models.FloatField(blank=True, null=True)),
                ("ci_low", models.FloatField(blank=True, null=True)),
                ("ci_high", models.FloatField(blank=True, null=True)),
                ("episodes_played", models.PositiveIntegerField(default=0)),
                ("faulty_episodes", models.PositiveIntegerField(default=0)),
                ("restarts", models.PositiveIntegerField(default=0)),
                ("episodes", models.JSONField(default=list)),
                ("log", models.TextField(blank=True)),
            ],
            options={
                "ordering": ["-created_at"],
                "indexes": [models.Index(fields=["status"], name="core_evalua_status_9ce966_idx")],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            (
                                "status__in",
                                ["queued", "running", "succeeded", "failed", "cancelled"],
                            )
                        ),
                        name="evaluation_status_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("status", "succeeded"), _negated=True),
                            ("mean_return__isnull", False),
                            _connector="OR",
                        ),
                        name="evaluation_succeeded_has_mean",
                    ),
                ],
            },
            bases=(core.models.tournaments.Refereed, models.Model),
        ),
        migrations.CreateModel(
            name="User",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("password", models.CharField(max_length=128, verbose_name="password")),
                (
                    "last_login",
                    models.DateTimeField(blank=True, null=True, verbose_name="last login"),
                ),
                (
                    "is_superuser",
                    models.BooleanField(
                        default=False,
                        help_text="Designates that this user has all permissions without explicitly assigning them.",
                        verbose_name="superuser status",
                    ),
                ),
                ("email", models.EmailField(max_length=254, unique=True)),
                ("display_name", models.CharField(max_length=80)),
                (
                    "role",
                    models.CharField(
                        choices=[("attendee", "Attendee"), ("organizer", "Organizer")],
                        default="attendee",
                        max_length=16,
                    ),
                ),
                (
                    "team",
                    models.CharField(
                        blank=True,
                        help_text="Shown beside the name (a school, a lab, a company). Not a competition's team: those are formed on the competition's page.",
                        max_length=80,
                        verbose_name="affiliation",
                    ),
                ),
                ("is_active", models.BooleanField(default=True)),
                ("is_staff", models.BooleanField(default=False)),
                ("date_joined", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "groups",
                    models.ManyToManyField(
                        blank=True,
                        help_text="The groups this user belongs to. A user will get all permissions granted to each of their groups.",
                        related_name="user_set",
                        related_query_name="user",
                        to="auth.group",
                        verbose_name="groups",
                    ),
                ),
                (
                    "user_permissions",
                    models.ManyToManyField(
                        blank=True,
                        help_text="Specific permissions for this user.",
                        related_name="user_set",
                        related_query_name="user",
                        to="auth.permission",
                        verbose_name="user permissions",
                    ),
                ),
            ],
            options={
                "ordering": ["display_name", "email"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("role__in", ["attendee", "organizer"])),
                        name="user_role_valid",
                    )
                ],
            },
            managers=[
                ("objects", core.models.accounts.UserManager()),
            ],
        ),
        migrations.CreateModel(
            name="Competition",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "slug",
                    models.SlugField(
                        help_text="Its address: /c/<slug>/.", max_length=64, unique=True
                    ),
                ),
                ("title", models.CharField(max_length=120)),
                ("description", models.TextField(blank=True)),
                (
                    "is_public",
                    models.BooleanField(
                        default=True,
                        help_text="Listed and open to everyone; otherwise organizers only.",
                    ),
                ),
                (
                    "team_size_limit",
                    models.PositiveSmallIntegerField(
                        default=5,
                        help_text="Members of a team, at most.",
                        validators=[django.core.validators.MinValueValidator(1)],
                    ),
                ),
                (
                    "final_submissions",
                    models.PositiveSmallIntegerField(
                        default=2,
                        help_text="Revisions a team may mark final (one per agent). A team that marks none plays the final with its newest validated revision.",
                        validators=[django.core.validators.MinValueValidator(1)],
                    ),
                ),
                (
                    "final_format",
                    models.CharField(
                        choices=[
                            ("round_robin", "Round robin"),
                            ("swiss", "Swiss"),
                            ("ladder", "Continuous ladder"),
                        ],
                        default="round_robin",
                        help_text="The final tournament's format.",
                        max_length=16,
                    ),
                ),
                (
                    "final_matches_per_duel",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Matches in each duel of the final; empty: the game's default.",
                        null=True,
                        validators=[django.core.validators.MinValueValidator(1)],
                    ),
                ),
                (
                    "final_rounds",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Swiss: its rounds (required). Ladder: the duels it plays before it ends (required: the final's ladder has a fixed length).",
                        null=True,
                        validators=[django.core.validators.MinValueValidator(1)],
                    ),
                ),
                (
                    "final_hidden",
                    models.BooleanField(
                        default=False,
                        help_text="Held out: the final's standings stay hidden, to everyone but the organizers, until they publish them (admin action). Otherwise they are published when it ends.",
                    ),
                ),
                ("final_error", models.TextField(blank=True, editable=False)),
                ("final_published_at", models.DateTimeField(blank=True, editable=False, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("final_format__in", ["round_robin", "swiss", "ladder"])
                        ),
                        name="competition_final_format_valid",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="CompetitionPhase",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=80)),
                ("starts_at", models.DateTimeField()),
                ("uploads_open", models.BooleanField(default=True)),
                (
                    "daily_limit",
                    models.PositiveSmallIntegerField(
                        blank=True,
                        help_text="Uploads per team per day (UTC), at most; empty: no limit.",
                        null=True,
                    ),
                ),
                (
                    "total_limit",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Uploads per team in this phase, at most; empty: no limit.",
                        null=True,
                    ),
                ),
                (
                    "plays",
                    models.CharField(
                        choices=[
                            ("ladder", "The game's ladder (rated with everyone)"),
                            ("own_ladder", "A ladder of its teams' agents only"),
                            ("final", "The final tournament"),
                            ("nothing", "Nothing"),
                        ],
                        default="ladder",
                        max_length=10,
                    ),
                ),
                (
                    "standings_public",
                    models.BooleanField(
                        default=True,
                        help_text="Its standings are shown to everyone; otherwise to the organizers only (each team still sees its own place).",
                    ),
                ),
                (
                    "competition",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="phases",
                        to="core.competition",
                    ),
                ),
            ],
            options={
                "ordering": ["competition", "starts_at"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("competition", "starts_at"),
                        name="competition_phase_start_unique",
                        violation_error_message="Two phases cannot start at the same time.",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("plays__in", ["ladder", "own_ladder", "final", "nothing"])
                        ),
                        name="competition_phase_plays_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("plays", "final"), _negated=True),
                            ("uploads_open", False),
                            _connector="OR",
                        ),
                        name="competition_final_phase_closes_uploads",
                        violation_error_message="The final phase closes uploads: untick “uploads open”.",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="Competitor",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.SlugField(max_length=64)),
                (
                    "is_public",
                    models.BooleanField(
                        default=False,
                        help_text="Anyone may see a public competitor's page, and an upload's code.",
                    ),
                ),
                (
                    "share_logs",
                    models.BooleanField(
                        default=False,
                        help_text="Once a duel is over, anyone may read its agent's logs: the duel's, and at each move in the replays (while the competitor is public).",
                    ),
                ),
                ("is_disabled", models.BooleanField(default=False)),
                (
                    "disabled_by",
                    models.CharField(
                        blank=True,
                        choices=[("owner", "its owner"), ("organizers", "the organizers")],
                        max_length=10,
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("hosted", "Hosted (uploaded code)"),
                            ("online", "Online (connects over the network)"),
                            ("llm", "LLM player (a model behind an OpenAI-compatible server)"),
                            ("human", "Human (plays in the browser)"),
                        ],
                        default="hosted",
                        max_length=8,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="competitors",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["environment", "name"],
            },
        ),
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=80)),
                ("hint", models.CharField(max_length=16)),
                ("token_hash", models.CharField(max_length=64, unique=True)),
                ("scopes", models.CharField(default="read", max_length=64)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_tokens",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "competitor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="model_tokens",
                        to="core.competitor",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("revoked_at__isnull", True)),
                        fields=("user", "name"),
                        name="api_token_name_unique_while_active",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Environment",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.SlugField(max_length=64, unique=True)),
                ("spec", models.CharField(blank=True, default="", max_length=200)),
                ("title", models.CharField(max_length=120)),
                ("description", models.TextField()),
                ("rules", models.TextField()),
                ("players", models.PositiveSmallIntegerField()),
                ("matches_per_duel", models.PositiveIntegerField()),
                ("ladder_matches_per_duel", models.PositiveIntegerField(default=2)),
                ("validation_matches", models.PositiveIntegerField()),
                ("move_time", models.FloatField()),
                ("time_bank", models.FloatField()),
                ("startup_time", models.FloatField()),
                ("memory_mb", models.PositiveIntegerField()),
                ("cpu_seconds", models.PositiveIntegerField()),
                ("is_active", models.BooleanField(default=True)),
                (
                    "standing_competition",
                    models.BooleanField(
                        default=True,
                        help_text="Arena keeps a competition of this game open by itself, in which every validated revision is rated without anyone acting: a ladder for a game of two or more players, a score competition for a one-player game. It plays when organizers' tournaments leave the workers idle. Untick to close it.",
                    ),
                ),
                ("leaderboard_key", models.CharField(blank=True, editable=False, max_length=64)),
                (
                    "leaderboard_fitted_at",
                    models.DateTimeField(blank=True, editable=False, null=True),
                ),
                ("first_move_advantage", models.FloatField(blank=True, editable=False, null=True)),
                ("leaderboard_fit_seconds", models.FloatField(default=0, editable=False)),
                ("ratings_epoch", models.PositiveIntegerField(default=0, editable=False)),
                ("imported_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "ordering": ["title"],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("spec", ""), _negated=True),
                        fields=("spec",),
                        name="environment_spec_unique",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Duel",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("num_players", models.PositiveSmallIntegerField(default=2)),
                ("round", models.PositiveIntegerField(blank=True, null=True)),
                ("is_validation", models.BooleanField(default=False)),
                ("num_matches", models.PositiveIntegerField()),
                ("seed", models.BigIntegerField()),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                            ("cancelled", "Cancelled"),
                        ],
                        default="queued",
                        max_length=16,
                    ),
                ),
                ("played_by", models.CharField(blank=True, max_length=120)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("ended_at", models.DateTimeField(blank=True, null=True)),
                (
                    "result",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("PLAYER_1_WIN", "Player 1 won"),
                            ("PLAYER_2_WIN", "Player 2 won"),
                            ("DRAW", "Draw"),
                            ("RANKED", "Ranked by score"),
                            ("ERROR", "Error"),
                        ],
                        max_length=16,
                    ),
                ),
                ("error", models.TextField(blank=True)),
                ("draws", models.PositiveIntegerField(default=0)),
                ("other_errors", models.PositiveIntegerField(default=0)),
                (
                    "requested_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="test_duels",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "environment",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="duels",
                        to="core.environment",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
                "indexes": [models.Index(fields=["status"], name="core_duel_status_d19893_idx")],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            (
                                "status__in",
                                ["queued", "running", "succeeded", "failed", "cancelled"],
                            )
                        ),
                        name="duel_status_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("result", ""),
                            (
                                "result__in",
                                ["PLAYER_1_WIN", "PLAYER_2_WIN", "DRAW", "RANKED", "ERROR"],
                            ),
                            _connector="OR",
                        ),
                        name="duel_result_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("status", "succeeded"), _negated=True),
                            models.Q(("result", ""), _negated=True),
                            _connector="OR",
                        ),
                        name="duel_succeeded_has_result",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("num_players__gte", 2), ("num_players__lte", 6)),
                        name="duel_num_players_valid",
                    ),
                ],
            },
            bases=(core.models.tournaments.Refereed, models.Model),
        ),
        migrations.AddField(
            model_name="competitor",
            name="environment",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="competitors",
                to="core.environment",
            ),
        ),
        migrations.AddField(
            model_name="competition",
            name="environment",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="competitions",
                to="core.environment",
            ),
        ),
        migrations.CreateModel(
            name="InviteCode",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("code", models.CharField(max_length=64, unique=True)),
                ("note", models.CharField(blank=True, max_length=200)),
                ("max_uses", models.PositiveIntegerField(default=100)),
                ("used_count", models.PositiveIntegerField(default=0)),
                ("expires_at", models.DateTimeField(blank=True, null=True)),
                ("is_active", models.BooleanField(default=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("used_count__lte", models.F("max_uses"))),
                        name="invite_uses_within_limit",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="LiveEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("lines", models.TextField()),
                (
                    "duel",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="live_events",
                        to="core.duel",
                    ),
                ),
            ],
            options={
                "ordering": ["id"],
            },
        ),
        migrations.CreateModel(
            name="LLMPlayer",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "base_url",
                    models.URLField(
                        help_text="An OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.",
                        max_length=500,
                        validators=[django.core.validators.URLValidator(schemes=["http", "https"])],
                    ),
                ),
                (
                    "model",
                    models.CharField(
                        help_text="The model name sent in requests.",
                        max_length=200,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[^\\x00-\\x1f\\x7f]+$", "Printable characters only."
                            )
                        ],
                    ),
                ),
                ("api_key_encrypted", models.TextField(blank=True, editable=False)),
                (
                    "api_key_ref",
                    models.CharField(
                        blank=True,
                        help_text="Instead of a stored key: env:ARENA_LLM_KEY_<NAME> (an environment variable of the duel workers) or file:<name> (a file in their ARENA_LLM_SECRETS_DIR); organizers only, read when it plays.",
                        max_length=300,
                        validators=[
                            django.core.validators.RegexValidator(
                                re.compile(
                                    "^(env:ARENA_LLM_KEY_[A-Za-z0-9_]+|file:[A-Za-z0-9][A-Za-z0-9._-]*)$"
                                ),
                                "Write env:ARENA_LLM_KEY_<NAME> (an environment variable of the duel workers) or file:<name> (a file in their ARENA_LLM_SECRETS_DIR); organizers only.",
                            )
                        ],
                    ),
                ),
                (
                    "temperature",
                    models.FloatField(
                        blank=True,
                        null=True,
                        validators=[
                            django.core.validators.MinValueValidator(0.0),
                            django.core.validators.MaxValueValidator(2.0),
                        ],
                    ),
                ),
                (
                    "top_p",
                    models.FloatField(
                        blank=True,
                        null=True,
                        validators=[
                            django.core.validators.MinValueValidator(0.0),
                            django.core.validators.MaxValueValidator(1.0),
                        ],
                    ),
                ),
                (
                    "max_tokens",
                    models.PositiveIntegerField(
                        default=512,
                        validators=[
                            django.core.validators.MinValueValidator(1),
                            django.core.validators.MaxValueValidator(32768),
                        ],
                    ),
                ),
                ("seed", models.BigIntegerField(blank=True, null=True)),
                (
                    "request_timeout",
                    models.FloatField(
                        default=60.0,
                        help_text="Seconds one request may take; a longer wait is the provider's failure.",
                        validators=[
                            django.core.validators.MinValueValidator(1.0),
                            django.core.validators.MaxValueValidator(600.0),
                        ],
                    ),
                ),
                (
                    "harness_version",
                    models.CharField(choices=[("1", "1")], default="1", max_length=16),
                ),
                (
                    "price_input_per_million",
                    models.DecimalField(
                        decimal_places=4,
                        default=Decimal("0"),
                        help_text="Price of a million prompt tokens (for the statistics' cost).",
                        max_digits=12,
                        validators=[django.core.validators.MinValueValidator(Decimal("0"))],
                    ),
                ),
                (
                    "price_output_per_million",
                    models.DecimalField(
                        decimal_places=4,
                        default=Decimal("0"),
                        help_text="Price of a million completion tokens.",
                        max_digits=12,
                        validators=[django.core.validators.MinValueValidator(Decimal("0"))],
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "competitor",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="llm",
                        to="core.competitor",
                    ),
                ),
            ],
            options={
                "verbose_name": "LLM player",
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("max_tokens__gte", 1)),
                        name="llm_player_max_tokens_positive",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("request_timeout__gt", 0)),
                        name="llm_player_timeout_positive",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="Match",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("index", models.PositiveIntegerField()),
                ("first_player", models.PositiveSmallIntegerField()),
                ("seats", models.JSONField(default=list)),
                ("scores", models.JSONField(default=list)),
                ("seed", models.BigIntegerField()),
                ("actions", models.JSONField(default=list)),
                ("timings", models.JSONField(default=list)),
                (
                    "result",
                    models.CharField(
                        choices=[
                            ("PLAYER_1_WIN", "Player 1 won"),
                            ("PLAYER_2_WIN", "Player 2 won"),
                            ("DRAW", "Draw"),
                            ("RANKED", "Ranked by score"),
                            ("ERROR", "Error"),
                        ],
                        max_length=16,
                    ),
                ),
                ("error_msg", models.TextField(blank=True)),
                ("faults", models.JSONField(default=list)),
                ("fault_player", models.PositiveSmallIntegerField(blank=True, null=True)),
                ("fault_kind", models.CharField(blank=True, max_length=32)),
                ("steps", models.PositiveIntegerField(default=0)),
                ("opening", models.PositiveSmallIntegerField(default=0)),
                ("duration", models.FloatField(default=0)),
                (
                    "duel",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="matches",
                        to="core.duel",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "matches",
                "ordering": ["duel", "index"],
                "constraints": [
                    models.UniqueConstraint(fields=("duel", "index"), name="match_index_unique"),
                    models.CheckConstraint(
                        condition=models.Q(("first_player__gte", 1), ("first_player__lte", 6)),
                        name="match_first_player_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("fault_player__isnull", True),
                            models.Q(("fault_player__gte", 1), ("fault_player__lte", 6)),
                            _connector="OR",
                        ),
                        name="match_fault_player_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            (
                                "result__in",
                                ["PLAYER_1_WIN", "PLAYER_2_WIN", "DRAW", "RANKED", "ERROR"],
                            )
                        ),
                        name="match_result_valid",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="MatchConversation",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("player", models.PositiveSmallIntegerField()),
                ("rank", models.PositiveSmallIntegerField(blank=True, null=True)),
                ("model", models.CharField(db_index=True, max_length=200)),
                ("harness_version", models.CharField(max_length=16)),
                ("harness_hash", models.CharField(max_length=64)),
                ("turns", models.JSONField(default=list)),
                ("moves", models.PositiveIntegerField(default=0)),
                ("requests", models.PositiveIntegerField(default=0)),
                ("illegal", models.PositiveIntegerField(default=0)),
                ("unparseable", models.PositiveIntegerField(default=0)),
                ("too_long", models.PositiveIntegerField(default=0)),
                ("retries", models.PositiveIntegerField(default=0)),
                ("provider_retries", models.PositiveIntegerField(default=0)),
                ("prompt_tokens", models.PositiveBigIntegerField(default=0)),
                ("completion_tokens", models.PositiveBigIntegerField(default=0)),
                ("latencies_ms", models.JSONField(default=list)),
                ("forfeited", models.BooleanField(default=False)),
                (
                    "competitor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="core.competitor",
                    ),
                ),
                (
                    "match",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="conversations",
                        to="core.match",
                    ),
                ),
            ],
            options={
                "ordering": ["match", "player"],
                "constraints": [
                    models.UniqueConstraint(fields=("match", "player"), name="conversation_unique"),
                    models.CheckConstraint(
                        condition=models.Q(("player__gte", 1), ("player__lte", 6)),
                        name="conversation_player_valid",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="MatchLog",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("player", models.PositiveSmallIntegerField()),
                ("moves", models.JSONField(default=list)),
                (
                    "match",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="logs",
                        to="core.match",
                    ),
                ),
            ],
            options={
                "ordering": ["match", "player"],
                "constraints": [
                    models.UniqueConstraint(fields=("match", "player"), name="match_log_unique"),
                    models.CheckConstraint(
                        condition=models.Q(("player__gte", 1), ("player__lte", 6)),
                        name="match_log_player_valid",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="OnlineSeat",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("queued_at", models.DateTimeField(blank=True, null=True)),
                ("last_seen_at", models.DateTimeField(blank=True, null=True)),
                (
                    "competitor",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="online_seat",
                        to="core.competitor",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="Rating",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("mu", models.FloatField(default=25.0)),
                ("sigma", models.FloatField(default=8.333333333333334)),
                ("games", models.PositiveIntegerField(default=0)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "competitor",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="rating",
                        to="core.competitor",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("sigma__gt", 0)), name="rating_sigma_positive"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="RatingChange",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("reason", models.CharField(default="match", max_length=32)),
                ("mu_before", models.FloatField()),
                ("sigma_before", models.FloatField()),
                ("mu_after", models.FloatField()),
                ("sigma_after", models.FloatField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "duel",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to="core.duel",
                    ),
                ),
                (
                    "match",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to="core.match",
                    ),
                ),
                (
                    "rating",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="changes",
                        to="core.rating",
                    ),
                ),
            ],
            options={
                "ordering": ["rating", "created_at"],
            },
        ),
        migrations.CreateModel(
            name="Revision",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("version", models.PositiveIntegerField()),
                (
                    "source",
                    models.FileField(
                        max_length=300, upload_to=core.models.submissions._revision_upload_path
                    ),
                ),
                ("filename", models.CharField(max_length=200)),
                ("sha256", models.CharField(max_length=64)),
                ("size", models.PositiveIntegerField()),
                ("entry_point", models.CharField(max_length=200)),
                ("has_requirements", models.BooleanField(default=False)),
                ("image", models.CharField(blank=True, max_length=200)),
                ("is_disabled", models.BooleanField(default=False)),
                ("marked_final_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "build_status",
                    models.CharField(
                        choices=[
                            ("none", "Not requested"),
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                        ],
                        default="queued",
                        max_length=16,
                    ),
                ),
                (
                    "validation_status",
                    models.CharField(
                        choices=[
                            ("none", "Not requested"),
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                        ],
                        default="queued",
                        max_length=16,
                    ),
                ),
                (
                    "publication_status",
                    models.CharField(
                        choices=[
                            ("none", "Not requested"),
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                        ],
                        default="none",
                        max_length=16,
                    ),
                ),
                (
                    "competitor",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="revisions",
                        to="core.competitor",
                    ),
                ),
                (
                    "uploaded_by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["competitor", "-version"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("competitor", "version"), name="revision_version_unique"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("version__gte", 1)), name="revision_version_positive"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            (
                                "build_status__in",
                                ["none", "queued", "running", "succeeded", "failed"],
                            )
                        ),
                        name="revision_build_status_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            (
                                "validation_status__in",
                                ["none", "queued", "running", "succeeded", "failed"],
                            )
                        ),
                        name="revision_validation_status_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            (
                                "publication_status__in",
                                ["none", "queued", "running", "succeeded", "failed"],
                            )
                        ),
                        name="revision_publication_status_valid",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="LeaderboardPoint",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("score", models.FloatField()),
                ("score_sd", models.FloatField()),
                ("matches", models.PositiveIntegerField()),
                ("fitted_at", models.DateTimeField()),
                (
                    "competitor",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="leaderboard_points",
                        to="core.competitor",
                    ),
                ),
                (
                    "revision",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="core.revision",
                    ),
                ),
            ],
            options={
                "ordering": ["competitor", "fitted_at", "pk"],
                "indexes": [
                    models.Index(
                        fields=["competitor", "fitted_at"], name="core_leader_competi_597b09_idx"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="LeaderboardEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("rank", models.PositiveIntegerField(blank=True, null=True)),
                ("rank_best", models.PositiveIntegerField()),
                ("rank_worst", models.PositiveIntegerField()),
                ("score", models.FloatField()),
                ("score_sd", models.FloatField()),
                ("matches", models.PositiveIntegerField()),
                ("wins", models.PositiveIntegerField()),
                ("draws", models.PositiveIntegerField()),
                ("losses", models.PositiveIntegerField()),
                ("fitted_at", models.DateTimeField()),
                (
                    "competitor",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="leaderboard_entry",
                        to="core.competitor",
                    ),
                ),
                (
                    "environment",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="leaderboard_entries",
                        to="core.environment",
                    ),
                ),
                (
                    "revision",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="core.revision",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "leaderboard entries",
                "ordering": [
                    "environment",
                    models.OrderBy(models.F("rank"), nulls_last=True),
                    "-score",
                ],
            },
        ),
        migrations.CreateModel(
            name="Job",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("build", "Build"),
                            ("validation", "Validation"),
                            ("publication", "Publication"),
                            ("duel", "Duel"),
                            ("evaluation", "Evaluation"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                            ("cancelled", "Cancelled"),
                        ],
                        default="queued",
                        max_length=16,
                    ),
                ),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("lease_owner", models.CharField(blank=True, max_length=120)),
                ("lease_expires_at", models.DateTimeField(blank=True, null=True)),
                ("resends", models.PositiveIntegerField(default=0)),
                (
                    "resend_at",
                    models.DateTimeField(
                        blank=True, default=core.models.submissions.resend_at_default, null=True
                    ),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("ended_at", models.DateTimeField(blank=True, null=True)),
                ("error", models.TextField(blank=True)),
                ("log", models.TextField(blank=True)),
                (
                    "duel",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="job",
                        to="core.duel",
                    ),
                ),
                (
                    "evaluation",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="job",
                        to="core.evaluation",
                    ),
                ),
                (
                    "revision",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="jobs",
                        to="core.revision",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-pk"],
                "indexes": [
                    models.Index(
                        fields=["status", "lease_expires_at"], name="core_job_status_e61736_idx"
                    ),
                    models.Index(fields=["status", "resend_at"], name="core_job_status_0895a3_idx"),
                    models.Index(fields=["kind", "status"], name="core_job_kind_5254e1_idx"),
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            (
                                "kind__in",
                                ["build", "validation", "publication", "duel", "evaluation"],
                            )
                        ),
                        name="job_kind_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            (
                                "status__in",
                                ["queued", "running", "succeeded", "failed", "cancelled"],
                            )
                        ),
                        name="job_status_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(
                                ("kind", "build"),
                                ("duel__isnull", True),
                                ("evaluation__isnull", True),
                                ("revision__isnull", False),
                            ),
                            models.Q(
                                ("kind", "validation"),
                                ("duel__isnull", True),
                                ("evaluation__isnull", True),
                                ("revision__isnull", False),
                            ),
                            models.Q(
                                ("kind", "publication"),
                                ("duel__isnull", True),
                                ("evaluation__isnull", True),
                                ("revision__isnull", False),
                            ),
                            models.Q(
                                ("kind", "duel"),
                                ("duel__isnull", False),
                                ("evaluation__isnull", True),
                                ("revision__isnull", True),
                            ),
                            models.Q(
                                ("kind", "evaluation"),
                                ("duel__isnull", True),
                                ("evaluation__isnull", False),
                                ("revision__isnull", True),
                            ),
                            _connector="OR",
                        ),
                        name="job_subject_matches_kind",
                    ),
                    models.UniqueConstraint(
                        condition=models.Q(("revision__isnull", False)),
                        fields=("kind", "revision"),
                        name="job_one_per_revision_step",
                    ),
                ],
            },
        ),
        migrations.AddField(
            model_name="evaluation",
            name="revision",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="evaluations",
                to="core.revision",
            ),
        ),
        migrations.CreateModel(
            name="DuelSeat",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.PositiveSmallIntegerField()),
                ("wins", models.PositiveIntegerField(default=0)),
                ("score", models.FloatField(default=0)),
                ("rank", models.PositiveSmallIntegerField(blank=True, null=True)),
                ("errors", models.PositiveIntegerField(default=0)),
                ("restarts", models.PositiveIntegerField(default=0)),
                ("log", models.TextField(blank=True)),
                (
                    "duel",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="seats",
                        to="core.duel",
                    ),
                ),
                (
                    "revision",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="duel_seats",
                        to="core.revision",
                    ),
                ),
            ],
            options={
                "ordering": ["duel_id", "number"],
                "indexes": [
                    models.Index(fields=["revision", "duel"], name="core_duelse_revisio_dd04dc_idx")
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("duel", "number"), name="duel_seat_unique"),
                    models.CheckConstraint(
                        condition=models.Q(("number__gte", 1), ("number__lte", 6)),
                        name="duel_seat_number_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("score__gte", 0)), name="duel_seat_score_positive"
                    ),
                ],
            },
        ),
        migrations.AddField(
            model_name="competition",
            name="reference_revisions",
            field=models.ManyToManyField(
                blank=True,
                help_text="Reference agents that play the final beside the teams' final revisions (the organizers' own, kept private: they play no development ladder of the competition).",
                related_name="+",
                to="core.revision",
            ),
        ),
        migrations.CreateModel(
            name="ScoreCompetition",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=120)),
                (
                    "episodes",
                    models.PositiveIntegerField(
                        help_text="Episodes each agent plays; the environment's matches per duel by default.",
                        validators=[
                            django.core.validators.MinValueValidator(1),
                            django.core.validators.MaxValueValidator(1000),
                        ],
                    ),
                ),
                (
                    "seed",
                    models.BigIntegerField(
                        default=core.models.scores._new_seed,
                        help_text="Draws the episodes' seeds, the same for every agent.",
                        validators=[
                            django.core.validators.MinValueValidator(0),
                            django.core.validators.MaxValueValidator(2147483647),
                        ],
                    ),
                ),
                ("is_public", models.BooleanField(default=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("is_standing", models.BooleanField(default=False, editable=False)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "entered",
                    models.ManyToManyField(
                        blank=True, related_name="score_competitions_entered", to="core.competitor"
                    ),
                ),
                (
                    "environment",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="score_competitions",
                        to="core.environment",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("episodes__gte", 1)),
                        name="score_competition_episodes_positive",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("seed__gte", 0)),
                        name="score_competition_seed_not_negative",
                    ),
                ],
            },
        ),
        migrations.AddField(
            model_name="evaluation",
            name="competition",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="evaluations",
                to="core.scorecompetition",
            ),
        ),
        migrations.CreateModel(
            name="Team",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=80)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("disqualified_at", models.DateTimeField(blank=True, editable=False, null=True)),
                ("disqualified_reason", models.CharField(blank=True, max_length=200)),
                (
                    "competition",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="teams",
                        to="core.competition",
                    ),
                ),
                (
                    "created_by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["competition", "name"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("competition", "name"), name="team_name_unique_per_competition"
                    )
                ],
            },
        ),
        migrations.AddField(
            model_name="competitor",
            name="team",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="competitors",
                to="core.team",
            ),
        ),
        migrations.CreateModel(
            name="TeamInvitation",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("email", models.EmailField(blank=True, max_length=254)),
                ("code_hash", models.CharField(max_length=64, unique=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("expires_at", models.DateTimeField()),
                ("accepted_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "accepted_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "created_by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="invitations",
                        to="core.team",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("accepted_at__isnull", True),
                            ("accepted_by__isnull", False),
                            _connector="OR",
                        ),
                        name="team_invitation_accepted_by_someone",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="TeamMember",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("joined_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "competition",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="core.competition",
                    ),
                ),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memberships",
                        to="core.team",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="team_memberships",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["team", "joined_at"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("competition", "user"), name="team_member_one_team_per_competition"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Tournament",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=120)),
                (
                    "format",
                    models.CharField(
                        choices=[
                            ("round_robin", "Round robin"),
                            ("swiss", "Swiss"),
                            ("ladder", "Continuous ladder"),
                        ],
                        default="round_robin",
                        max_length=16,
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("draft", "Draft"),
                            ("running", "Running"),
                            ("completed", "Completed"),
                            ("failed", "Failed"),
                            ("cancelled", "Cancelled"),
                        ],
                        default="draft",
                        max_length=16,
                    ),
                ),
                (
                    "matches_per_duel",
                    models.PositiveIntegerField(
                        help_text="Matches in each duel; the environment's default when created from the admin."
                    ),
                ),
                (
                    "rounds",
                    models.PositiveIntegerField(blank=True, help_text="Swiss only.", null=True),
                ),
                ("current_round", models.PositiveIntegerField(default=0)),
                ("is_public", models.BooleanField(default=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("starts_at", models.DateTimeField(blank=True, null=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("ended_at", models.DateTimeField(blank=True, null=True)),
                ("error", models.TextField(blank=True)),
                ("is_standing", models.BooleanField(default=False, editable=False)),
                (
                    "concurrent_duels",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Ladders only: its pace, the duels between hosted agents queued or running at once. Empty: ARENA_LADDER_CONCURRENT_DUELS.",
                        null=True,
                        validators=[django.core.validators.MinValueValidator(1)],
                    ),
                ),
                (
                    "open_entry",
                    models.BooleanField(
                        default=True,
                        editable=False,
                        help_text="Ladders only: the newest validated revision of every competitor joins it while it runs. Off: it plays the revisions it was created with (a competition's final).",
                    ),
                ),
                (
                    "duels_limit",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Ladders only: it ends by itself once this many duels are played (a ladder of a fixed length, as a competition's final); empty: until stopped.",
                        null=True,
                        validators=[django.core.validators.MinValueValidator(1)],
                    ),
                ),
                ("duels_total", models.PositiveIntegerField(default=0)),
                ("duels_done", models.PositiveIntegerField(default=0)),
                ("duels_failed", models.PositiveIntegerField(default=0)),
                ("ranked_at", models.DateTimeField(blank=True, editable=False, null=True)),
                ("ranked_duels", models.PositiveIntegerField(default=0, editable=False)),
                ("ranking_seconds", models.FloatField(default=0, editable=False)),
                (
                    "created_by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "entrants",
                    models.ForeignKey(
                        blank=True,
                        editable=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="ladders",
                        to="core.competition",
                    ),
                ),
                (
                    "environment",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="tournaments",
                        to="core.environment",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("status__in", ["draft", "running", "completed", "failed", "cancelled"])
                        ),
                        name="tournament_status_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("format__in", ["round_robin", "swiss", "ladder"])),
                        name="tournament_format_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("duels_done__lte", models.F("duels_total")),
                            ("duels_failed__lte", models.F("duels_total")),
                        ),
                        name="tournament_progress_within_total",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("matches_per_duel__gte", 1)),
                        name="tournament_matches_positive",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="RatedPairing",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("first_player", models.PositiveSmallIntegerField()),
                ("epoch", models.PositiveIntegerField()),
                ("games", models.PositiveIntegerField(default=0)),
                ("one_wins", models.PositiveIntegerField(default=0)),
                ("draws", models.PositiveIntegerField(default=0)),
                (
                    "one",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="core.revision",
                    ),
                ),
                (
                    "two",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="core.revision",
                    ),
                ),
                (
                    "tournament",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="core.tournament",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tournament", "one", "two", "first_player", "epoch"),
                        name="rated_pairing_unique",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Participant",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("points", models.PositiveIntegerField(default=0)),
                ("wins", models.PositiveIntegerField(default=0)),
                ("losses", models.PositiveIntegerField(default=0)),
                ("draws", models.PositiveIntegerField(default=0)),
                ("score", models.FloatField(default=0)),
                ("rank", models.PositiveIntegerField(blank=True, null=True)),
                ("withdrawn", models.BooleanField(default=False)),
                ("seed", models.PositiveIntegerField(blank=True, null=True)),
                ("byes", models.PositiveIntegerField(default=0)),
                ("buchholz", models.PositiveIntegerField(default=0)),
                ("joined_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("duels_played", models.PositiveIntegerField(default=0)),
                ("last_duel_at", models.DateTimeField(blank=True, null=True)),
                (
                    "revision",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="entries",
                        to="core.revision",
                    ),
                ),
                (
                    "tournament",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="participants",
                        to="core.tournament",
                    ),
                ),
            ],
            options={
                "ordering": ["tournament", "rank", "-points"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tournament", "revision"), name="participant_unique_per_tournament"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("score__gte", 0)), name="participant_score_positive"
                    ),
                ],
            },
        ),
        migrations.AddField(
            model_name="duel",
            name="tournament",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="duels",
                to="core.tournament",
            ),
        ),
        migrations.AddField(
            model_name="competition",
            name="final_tournament",
            field=models.OneToOneField(
                blank=True,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="competition",
                to="core.tournament",
            ),
        ),
        migrations.CreateModel(
            name="UploadContent",
            fields=[
                ("sha256", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("content", models.BinaryField()),
                ("size", models.PositiveIntegerField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("size", django.db.models.functions.text.Length("content"))
                        ),
                        name="upload_content_size_matches",
                    )
                ],
            },
        ),
        migrations.AddField(
            model_name="revision",
            name="upload",
            field=models.ForeignKey(
                blank=True,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="revisions",
                to="core.uploadcontent",
            ),
        ),
        migrations.AddConstraint(
            model_name="evaluation",
            constraint=models.UniqueConstraint(
                condition=models.Q(("competition__isnull", False)),
                fields=("competition", "revision"),
                name="evaluation_once_per_competition",
            ),
        ),
        migrations.AddConstraint(
            model_name="evaluation",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("competition__isnull", True), ("is_validation", False), _connector="OR"
                ),
                name="evaluation_validation_has_no_competition",
            ),
        ),
        migrations.AddConstraint(
            model_name="competitor",
            constraint=models.UniqueConstraint(
                fields=("environment", "name"), name="competitor_name_unique_per_environment"
            ),
        ),
        migrations.AddConstraint(
            model_name="revision",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("upload__isnull", True), ("upload", models.F("sha256")), _connector="OR"
                ),
                name="revision_upload_matches_sha256",
            ),
        ),
    ]
