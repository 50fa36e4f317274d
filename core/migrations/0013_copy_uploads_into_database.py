"""Copy every stored upload from the media folder into the database (``UploadContent``).

Each revision's file is read, its SHA-256 checked against the one recorded at upload, and
its bytes stored once per content. The media files stay where they are: nothing is moved
or deleted, so undoing this migration loses nothing. A file that is missing, unreadable
or no longer matches its SHA-256 is not copied: the revision is named on the output with
the reason, and a build or duel of it later fails saying its upload is not stored (the
owner uploads it again).
"""

from __future__ import annotations

import hashlib
import sys

from django.db import migrations


def copy_uploads(apps, schema_editor) -> None:
    revisions = apps.get_model("core", "Revision")
    contents = apps.get_model("core", "UploadContent")
    pending = revisions.objects.filter(upload__isnull=True).exclude(source="").order_by("pk")
    problems = []
    for revision in pending.only("pk", "source", "sha256", "version").iterator(chunk_size=50):
        try:
            with revision.source.open("rb") as stored:
                content = stored.read()
        except OSError as error:
            problems.append(f"revision {revision.pk} (v{revision.version}): {error}")
            continue
        digest = hashlib.sha256(content).hexdigest()
        if digest != revision.sha256:
            problems.append(
                f"revision {revision.pk} (v{revision.version}): {revision.source.name} has "
                f"SHA-256 {digest[:12]}..., not {revision.sha256[:12]}... as uploaded"
            )
            continue
        contents.objects.get_or_create(
            sha256=digest, defaults={"content": content, "size": len(content)}
        )
        revisions.objects.filter(pk=revision.pk).update(upload_id=digest)
    for problem in problems:
        print(
            f"  upload not copied into the database, {problem}; it cannot be built again "
            "until its owner uploads it anew",
            file=sys.stderr,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0012_uploads_in_database"),
    ]

    operations = [
        # Back: the media files were never touched, and the table goes with 0012.
        migrations.RunPython(copy_uploads, migrations.RunPython.noop, elidable=False),
    ]
