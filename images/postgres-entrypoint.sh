#!/bin/sh
# First start: a cluster with SCRAM passwords, the role POSTGRES_USER with the password
# read from POSTGRES_PASSWORD_FILE (never from the command line), and its database.
# Every start: PostgreSQL in the foreground, listening on every interface of the
# container (docker-compose.yml publishes it on the host's private address at most).
set -eu
: "${POSTGRES_USER:=arena}" "${POSTGRES_DB:=arena}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -r "${POSTGRES_PASSWORD_FILE:-}" ] || { echo "POSTGRES_PASSWORD_FILE is not readable" >&2; exit 1; }
  initdb --pgdata="$PGDATA" --username=postgres --auth-local=peer --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  {
    echo "listen_addresses = '*'"
    echo "password_encryption = scram-sha-256"
  } >> "$PGDATA/postgresql.conf"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl --pgdata="$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  password=$(cat "$POSTGRES_PASSWORD_FILE")
  psql -v ON_ERROR_STOP=1 -q -U postgres -d postgres \
    -v user="$POSTGRES_USER" -v password="$password" -v db="$POSTGRES_DB" <<'SQL'
CREATE ROLE :"user" LOGIN PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"user";
SQL
  pg_ctl --pgdata="$PGDATA" -m fast -w stop >/dev/null
  echo "arena-postgres: created the cluster, the role $POSTGRES_USER and the database $POSTGRES_DB"
fi
exec postgres -D "$PGDATA"
