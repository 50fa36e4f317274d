"""A duel's and an evaluation's times are its job's: the copies they kept are cleared.

Every one played as work of its own has had a job since 0021 (which copied its times),
and each claim and record has written the times to both since, so the job holds them;
a retried one's copy was stale (its job's were cleared, its own kept). One without a
job (none is expected) is given one, with its times, so nothing is lost. A validation's
duel or evaluation has no job and keeps its own times.
"""

from django.db import migrations
from django.db.models import OuterRef, Subquery

KINDS = (("duel", "Duel"), ("evaluation", "Evaluation"))


def times_to_jobs(apps, schema_editor):
    Job = apps.get_model("core", "Job")
    for kind, model in KINDS:
        rows = apps.get_model("core", model).objects.filter(is_validation=False)
        orphans = rows.filter(job__isnull=True).order_by("pk")
        Job.objects.bulk_create(
            (
                Job(
                    kind=kind,
                    **{kind: row},
                    status=row.status,
                    attempts=0 if row.status == "queued" else 1,
                    # Nothing sends it: it was never started without a job either.
                    resend_at=None,
                    created_at=row.created_at,
                    started_at=row.started_at,
                    ended_at=row.ended_at,
                    error=row.error,
                )
                for row in orphans.iterator()
            ),
            batch_size=1000,
        )
        rows.exclude(started_at=None, ended_at=None).update(started_at=None, ended_at=None)


def times_from_jobs(apps, schema_editor):
    Job = apps.get_model("core", "Job")
    for kind, model in KINDS:
        jobs = Job.objects.filter(kind=kind, **{kind: OuterRef("pk")})
        apps.get_model("core", model).objects.filter(is_validation=False).update(
            started_at=Subquery(jobs.values("started_at")[:1]),
            ended_at=Subquery(jobs.values("ended_at")[:1]),
        )


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0033_rated_pairings"),
    ]

    operations = [
        migrations.RunPython(times_to_jobs, times_from_jobs),
    ]
