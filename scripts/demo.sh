#!/usr/bin/env bash
# The demo on the embedded default (SQLite in var/, the process sandbox, no servers to
# install): sets up .venv, migrates, runs `manage.py demo` (imports the games, makes the
# demo organizer and attendee and the invite code "welcome", uploads every reference
# player, which is built and validated by self-play, plays a round robin per game and
# prints the standings), then serves the site until Ctrl-C.
#
# Usage: scripts/demo.sh [--no-serve] [demo options, e.g. --games sum_to_10 --matches 4 --fresh]
# ARENA_DEMO_NO_SERVE=1 is the same as --no-serve; ARENA_PORT picks the port (8000).
set -euo pipefail
cd "$(dirname "$0")/.."

serve=1
[ "${ARENA_DEMO_NO_SERVE:-0}" = 1 ] && serve=0
demo_args=()
for arg in "$@"; do
  if [ "$arg" = "--no-serve" ]; then serve=0; else demo_args+=("$arg"); fi
done
port=${ARENA_PORT:-8000}

scripts/setup.sh
.venv/bin/python manage.py migrate --verbosity 0
.venv/bin/python manage.py demo --port "$port" ${demo_args[@]+"${demo_args[@]}"}

echo
if [ "$serve" = 0 ]; then
  echo "Not serving (--no-serve). Start the site with:"
  echo "  .venv/bin/python manage.py runserver 127.0.0.1:$port"
  exit 0
fi
echo "Serving http://127.0.0.1:$port/ (admin: http://127.0.0.1:$port/admin/); log in as the"
echo "organizer printed above. Ctrl-C stops the server; run scripts/demo.sh again to come back."
exec .venv/bin/python manage.py runserver "127.0.0.1:$port"
