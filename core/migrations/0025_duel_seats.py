"""Seats as rows, step 1 of 3: the seat table and the duel's game, beside the old columns
(filled by 0026, which the old columns leave in 0027)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0024_revision_step_columns_removed"),
    ]

    operations = [
        # Nullable until they go (0027), so that going back fills them again (0026) before
        # they are required again.
        *(
            migrations.AlterField(
                model_name="duel",
                name=name,
                field=models.ForeignKey(
                    null=True,
                    on_delete=django.db.models.deletion.PROTECT,
                    related_name="+",
                    to="core.revision",
                ),
            )
            for name in ("revision_1", "revision_2")
        ),
        migrations.AddField(
            model_name="duel",
            name="environment",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="duels",
                to="core.environment",
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
                        on_delete=django.db.models.deletion.CASCADE,
                        db_index=False,
                        related_name="seats",
                        to="core.duel",
                    ),
                ),
                (
                    "revision",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        db_index=False,
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
    ]
