#!/usr/bin/env bash
# Creates the secrets docker-compose.yml reads, in ./secrets (or the folder given): random
# passwords for PostgreSQL and Redis, the Django secret key, the key that encrypts LLM
# players' API keys, and the two URLs built from them. A file that exists is kept unless
# its value is given (GIVEN_<NAME> below); the URLs are built again on every run, so new
# passwords copied in or a new CONTROL_HOST take effect. The folder is readable by root
# alone (0700); docker-compose mounts each file into the containers that need it, under
# /run/secrets. Never commit it; back it up with the database (docs/operators/backups.md):
# without secrets_key the stored API keys cannot be read.
#
# Usage: scripts/make_secrets.sh [FOLDER]
#   CONTROL_HOST=10.0.1.5   a worker host's URLs: the worker machines reach PostgreSQL and
#                           Redis at the control machine's address
#   GIVEN_<NAME>=value      the value of the file <name>, replacing it (GIVEN_DB_PASSWORD,
#                           GIVEN_REDIS_PASSWORD, GIVEN_SECRET_KEY, GIVEN_SECRETS_KEY,
#                           GIVEN_PUBLISH_REPOSITORY): for secrets kept elsewhere, such
#                           as terraform/'s SSM parameters
set -euo pipefail
cd "$(dirname "$0")/.."
folder=${1:-secrets}
host_db=${CONTROL_HOST:-postgres}
host_redis=${CONTROL_HOST:-redis}
umask 077
mkdir -p "$folder"
chmod 0700 "$folder"
random() { python3 -c 'import secrets; print(secrets.token_urlsafe(36))'; }
put() {  # name, value: written unless the file holds that value already
  if [ ! -f "$folder/$1" ] || [ "$(cat "$folder/$1")" != "$2" ]; then
    printf '%s\n' "$2" > "$folder/$1"
    echo "arena secrets: wrote $folder/$1"
  fi
  # Readable inside the containers (each runs as its own user, and docker-compose mounts
  # the file as it is); the folder keeps others on this host out.
  chmod 0644 "$folder/$1"
}
secret() {  # name, new value: the one given as GIVEN_<NAME>, else the file's, else the new one
  local given="GIVEN_${1^^}"
  if [ -n "${!given:-}" ]; then
    put "$1" "${!given}"
  elif [ -s "$folder/$1" ]; then
    put "$1" "$(cat "$folder/$1")"
  else
    put "$1" "$2"
  fi
}
secret db_password "$(random)"
secret redis_password "$(random)"
secret secret_key "$(random)$(random)"
secret secrets_key "$(python3 -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())')"
put database_url "postgres://arena:$(cat "$folder/db_password")@$host_db:5432/arena"
put broker_url "redis://:$(cat "$folder/redis_password")@$host_redis:6379/0"
# The publication repository's URL with its credentials (docs/organizers/publishing.md); empty:
# publishing is off.
secret publish_repository ""
