#!/usr/bin/env bash
# Backs up a docker-compose deployment (docs/operators/backups.md) into one
# archive, FOLDER/arena-backup-<UTC time>.tar, readable by its owner alone. In it:
#   database.dump   the PostgreSQL database in pg_dump's custom format: one consistent
#                   snapshot, taken while the site runs. pg_dump runs in the postgres
#                   container as its superuser over the local socket (peer
#                   authentication), so no password is needed or shown anywhere.
#   media.tar.gz    the media volume (uploads), copied right after the dump; it may hold
#                   an upload made meanwhile, which no row of the dump names (harmless).
#                   An empty volume gives an empty archive.
#   manifest.txt    when, from which compose project and commit, and the last migration
#                   of each app in the dump.
#   SHA256SUMS      checksums of the three; scripts/restore.sh checks them first.
# Not in it: ./secrets (keep a copy apart, as safely: without secrets_key the stored LLM
# API keys cannot be read), Redis (queues; the tournament manager sends lost work
# again), the images (scripts/build_images.sh makes them; revisions' images are rebuilt
# from the admin on a new machine).
#
# Usage: scripts/backup.sh FOLDER
#   Run it where docker-compose runs (it uses ./docker-compose.yml and ./.env);
#   COMPOSE_PROJECT_NAME and COMPOSE_FILE are docker-compose's own, DOCKER_COMPOSE the
#   command (default: docker-compose). Prints the archive's path. Needs the postgres
#   service running.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
say() { printf 'arena backup: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
read -r -a compose <<< "${DOCKER_COMPOSE:-docker-compose}"

[ $# -eq 1 ] || die "usage: scripts/backup.sh FOLDER (where the archive goes)"
folder=$1
umask 077
mkdir -p "$folder"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
archive="$folder/arena-backup-$stamp.tar"
[ ! -e "$archive" ] || die "$archive exists already"
work=$(mktemp -d "$folder/.arena-backup-XXXXXX")
trap 'rm -rf "$work" "$archive.partial"' EXIT

"${compose[@]}" ps --services --filter status=running 2>/dev/null | grep -x postgres >/dev/null \
  || die "the postgres service is not running here: start it (docker-compose up -d postgres)"

say "the database (pg_dump, custom format)"
"${compose[@]}" exec -T postgres sh -c 'exec pg_dump --format=custom --dbname="$POSTGRES_DB"' \
  > "$work/database.dump" || die "pg_dump failed: nothing was written"
# The dump is read back as pg_restore would read it: a dump that cannot be listed is no
# backup.
"${compose[@]}" exec -T postgres pg_restore --list < "$work/database.dump" > /dev/null \
  || die "pg_restore cannot read the dump pg_dump made: nothing was written"
migrations=$("${compose[@]}" exec -T postgres sh -c 'exec psql -At -d "$POSTGRES_DB"' <<'SQL'
SELECT app || ' ' || max(name) FROM django_migrations GROUP BY app ORDER BY app;
SQL
)

say "the media volume (uploads)"
"${compose[@]}" run --rm --no-deps -T web tar -C /srv/arena/media -czf - . \
  > "$work/media.tar.gz" 2> "$work/media.log" \
  || die "could not read the media volume: $(tail -3 "$work/media.log")"
rm "$work/media.log"

{
  echo "arena backup $stamp"
  echo "project: ${COMPOSE_PROJECT_NAME:-$(basename "$PWD")}"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "migrations (the last of each app):"
  printf '%s\n' "$migrations" | sed 's/^/  /'
} > "$work/manifest.txt"
(cd "$work" && sha256sum database.dump media.tar.gz manifest.txt > SHA256SUMS)

tar -C "$work" -cf "$archive.partial" SHA256SUMS manifest.txt database.dump media.tar.gz
mv "$archive.partial" "$archive"
say "wrote $archive ($(du -h "$archive" | cut -f1))"
echo "$archive"
