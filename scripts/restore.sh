#!/usr/bin/env bash
# Restores an archive of scripts/backup.sh into this docker-compose deployment: its
# database replaces the current one and its uploads the media volume (docs/operators/
# backups.md).
#
# The archive is checked first (a tar with every part, SHA256SUMS matching, a dump
# pg_restore can read) and restored into a database of its own; only then are the
# services that write (the site, the gateway, the workers, beat, the tournament manager)
# stopped, the database swapped for the restored one, the media volume replaced and
# `manage.py migrate` run (a backup made by older code gets the newer migrations), and
# the services that were running started again (nginx shows its maintenance page
# meanwhile). Any failure before the swap leaves the deployment as it was, and says so.
#
# Usage: scripts/restore.sh ARCHIVE
#   Run it where docker-compose runs, as scripts/backup.sh (COMPOSE_PROJECT_NAME,
#   COMPOSE_FILE, DOCKER_COMPOSE). Starts the postgres service if it is not running. The
#   secrets need not be the backup's, except secrets_key for the stored LLM API keys.
set -Eeuo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
say() { printf 'arena restore: %s\n' "$*" >&2; }
refuse() { say "$*"; say "nothing was changed"; exit 1; }
read -r -a compose <<< "${DOCKER_COMPOSE:-docker-compose}"
#: The services that write to the database or the media volume.
WRITERS=(web gateway worker-build worker-duels worker-online worker-publish beat manager)
STAGING=arena_restoring

[ $# -eq 1 ] || refuse "usage: scripts/restore.sh ARCHIVE (made by scripts/backup.sh)"
archive=$1
[ -f "$archive" ] || refuse "$archive: no such archive"
work=$(mktemp -d "${TMPDIR:-/tmp}/arena-restore-XXXXXX")
trap 'rm -rf "$work"' EXIT
# Until the writers stop, a failure has changed nothing; after it, say what to do.
stopped=""
failed() {
  if [ -z "$stopped" ]; then
    say "failed (see above); nothing was changed"
  else
    say "failed midway (see above): run it again, the archive is intact; stopped: $stopped"
  fi
}
trap failed ERR

say "checking $archive"
tar -C "$work" -xf "$archive" 2> "$work/tar.log" \
  || refuse "$archive is not a backup archive: tar cannot read it ($(head -1 "$work/tar.log"))"
for part in SHA256SUMS manifest.txt database.dump media.tar.gz; do
  [ -f "$work/$part" ] || refuse "$archive is not a backup of scripts/backup.sh: $part is missing"
done
(cd "$work" && sha256sum --quiet --check SHA256SUMS) > "$work/sums.log" 2>&1 \
  || refuse "$archive is corrupt: $(grep -m1 FAILED "$work/sums.log" || head -1 "$work/sums.log")"
gzip -t "$work/media.tar.gz" 2> /dev/null || refuse "$archive is corrupt: media.tar.gz"
sed -n '1,3p' "$work/manifest.txt" | sed 's/^/  /' >&2

# PostgreSQL's own tools, in its container, as its superuser over the local socket.
if ! "${compose[@]}" ps --services --filter status=running 2>/dev/null | grep -x postgres >/dev/null; then
  say "starting postgres"
  "${compose[@]}" up -d --no-deps postgres >&2
fi
sql() {
  "${compose[@]}" exec -T -e PGOPTIONS=--client-min-messages=warning postgres \
    psql -q -v ON_ERROR_STOP=1 -d postgres "$@"
}
answers() { "${compose[@]}" exec -T postgres pg_isready -q 2> /dev/null; }
for _ in $(seq 60); do
  answers && break
  sleep 1
done
answers || refuse "PostgreSQL does not answer: see docker-compose logs postgres"
"${compose[@]}" exec -T postgres pg_restore --list < "$work/database.dump" > /dev/null 2>&1 \
  || refuse "$archive is corrupt: pg_restore cannot read its database.dump"
read -r owner database < <("${compose[@]}" exec -T postgres sh -c 'echo "$POSTGRES_USER $POSTGRES_DB"')

say "restoring the database into $STAGING (the site keeps running meanwhile)"
sql -c "DROP DATABASE IF EXISTS $STAGING" -c "CREATE DATABASE $STAGING OWNER \"$owner\""
if ! "${compose[@]}" exec -T postgres pg_restore --no-owner --role="$owner" --exit-on-error \
    --single-transaction --dbname="$STAGING" < "$work/database.dump" > "$work/restore.log" 2>&1; then
  sql -c "DROP DATABASE IF EXISTS $STAGING" || true
  tail -5 "$work/restore.log" >&2
  refuse "pg_restore failed"
fi

running=()
while read -r service; do
  if [[ " ${WRITERS[*]} " == *" $service "* ]]; then
    running+=("$service")
  fi
done < <("${compose[@]}" ps --services --filter status=running)
if [ ${#running[@]} -gt 0 ]; then
  say "stopping the services that write: ${running[*]}"
  stopped="${running[*]}"
  "${compose[@]}" stop "${running[@]}" >&2
fi

say "swapping the database for the restored one"
stopped=${stopped:-none}
sql -c "DROP DATABASE \"$database\" WITH (FORCE)"
sql -c "ALTER DATABASE $STAGING RENAME TO \"$database\""

say "replacing the media volume"
"${compose[@]}" run --rm --no-deps -T web sh -c \
  'find /srv/arena/media -mindepth 1 -delete && tar -C /srv/arena/media -xzf -' \
  < "$work/media.tar.gz" >&2

say "migrating (what is newer than the backup)"
"${compose[@]}" run --rm --no-deps -T migrate >&2

if [ ${#running[@]} -gt 0 ]; then
  say "starting again: ${running[*]}"
  "${compose[@]}" start "${running[@]}" >&2
fi
say "restored $archive"
