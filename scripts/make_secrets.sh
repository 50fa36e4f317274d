#!/usr/bin/env bash
# Creates the secrets docker-compose.yml reads, in ./secrets (or the folder given), unless
# they exist: random passwords for PostgreSQL and Redis, the Django secret key, the key
# that encrypts LLM players' API keys, and the two URLs built from them. The folder is
# readable by root alone (0700); docker-compose mounts each file into the containers that
# need it, under /run/secrets. Never commit it; back it up with the database (README,
# "Production"): without secrets_key the stored API keys cannot be read.
#
# Usage: scripts/make_secrets.sh [FOLDER]      (CONTROL_HOST=10.0.1.5 for a worker host's
#        URLs: the worker machines reach PostgreSQL and Redis at the control's address)
set -euo pipefail
cd "$(dirname "$0")/.."
folder=${1:-secrets}
host_db=${CONTROL_HOST:-postgres}
host_redis=${CONTROL_HOST:-redis}
umask 077
mkdir -p "$folder"
chmod 0700 "$folder"
random() { python3 -c 'import secrets; print(secrets.token_urlsafe(36))'; }
write() {  # name, value: kept if the file exists already
  if [ ! -s "$folder/$1" ]; then
    printf '%s\n' "$2" > "$folder/$1"
    echo "arena secrets: wrote $folder/$1"
  fi
  # Readable inside the containers (each runs as its own user); the folder keeps others
  # on this host out.
  chmod 0644 "$folder/$1"
}
write db_password "$(random)"
write redis_password "$(random)"
write secret_key "$(random)$(random)"
write secrets_key "$(python3 -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())')"
write database_url "postgres://arena:$(cat "$folder/db_password")@$host_db:5432/arena"
write broker_url "redis://:$(cat "$folder/redis_password")@$host_redis:6379/0"
# The publication repository's URL, with its credentials (README, "Publishing"); left
# empty, publishing is off.
if [ ! -e "$folder/publish_repository" ]; then
  : > "$folder/publish_repository"
  chmod 0644 "$folder/publish_repository"
fi
