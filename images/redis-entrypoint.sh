#!/bin/sh
# Redis in the foreground with its data in /data (append-only file: a queued duel
# survives a restart), the password from REDIS_PASSWORD_FILE in a config file that
# only this user reads (never on the command line, where `ps` would show it).
set -eu
[ -r "${REDIS_PASSWORD_FILE:-}" ] || { echo "REDIS_PASSWORD_FILE is not readable" >&2; exit 1; }
config=/tmp/redis.conf
umask 077
{
  echo "bind 0.0.0.0"
  echo "port 6379"
  echo "dir /data"
  echo "appendonly yes"
  echo "protected-mode yes"
  echo "requirepass $(cat "$REDIS_PASSWORD_FILE")"
} > "$config"
exec redis-server "$config"
