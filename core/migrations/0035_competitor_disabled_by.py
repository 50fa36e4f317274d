"""Who disabled a competitor (until now only the organizers could); the public box's help."""

from django.db import migrations, models


def organizers_disabled_them(apps, schema_editor):
    Competitor = apps.get_model("core", "Competitor")
    Competitor.objects.filter(is_disabled=True).update(disabled_by="organizers")


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0034_duel_and_evaluation_times_in_jobs"),
    ]

    operations = [
        migrations.AddField(
            model_name="competitor",
            name="disabled_by",
            field=models.CharField(
                blank=True,
                choices=[("owner", "its owner"), ("organizers", "the organizers")],
                max_length=10,
            ),
        ),
        migrations.RunPython(organizers_disabled_them, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="competitor",
            name="is_public",
            field=models.BooleanField(
                default=False,
                help_text="Anyone may see a public competitor's page, and an upload's code.",
            ),
        ),
    ]
