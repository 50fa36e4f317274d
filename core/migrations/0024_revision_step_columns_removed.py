"""A revision's build, validation and publication live in their jobs (0023): the
revision keeps only each step's status. Apart from 0023, since PostgreSQL refuses to
alter a table with the data migration's pending foreign-key checks in one transaction."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0023_revision_steps_in_jobs"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="revision",
            name="build_attempts",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="build_ended_at",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="build_error",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="build_lease_expires_at",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="build_lease_owner",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="build_log",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="build_resend_at",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="build_resends",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="build_started_at",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="publication_ended_at",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="publication_error",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="publication_log",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="publication_started_at",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="validation_attempts",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="validation_ended_at",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="validation_error",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="validation_lease_expires_at",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="validation_lease_owner",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="validation_log",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="validation_resend_at",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="validation_resends",
        ),
        migrations.RemoveField(
            model_name="revision",
            name="validation_started_at",
        ),
    ]
