"""Seats as rows, step 3 of 3: the old columns and the table of players 3 to 6 go."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0026_duel_seats_from_columns"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="duel",
            name="duel_scores_positive",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="player_1_errors",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="player_1_log",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="player_1_restarts",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="player_1_score",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="player_1_wins",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="player_2_errors",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="player_2_log",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="player_2_restarts",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="player_2_score",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="player_2_wins",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="revision_1",
        ),
        migrations.RemoveField(
            model_name="duel",
            name="revision_2",
        ),
        migrations.RemoveField(
            model_name="match",
            name="player_1_score",
        ),
        migrations.RemoveField(
            model_name="match",
            name="player_2_score",
        ),
        migrations.AlterField(
            model_name="duel",
            name="environment",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="duels",
                to="core.environment",
            ),
        ),
        migrations.AlterField(
            model_name="match",
            name="scores",
            field=models.JSONField(default=list),
        ),
        migrations.AlterField(
            model_name="match",
            name="seat_players",
            field=models.JSONField(default=list),
        ),
        migrations.DeleteModel(
            name="DuelPlayer",
        ),
        # The same name as the referee's records, the live events and the REST API.
        migrations.RenameField(model_name="match", old_name="seat_players", new_name="seats"),
    ]
