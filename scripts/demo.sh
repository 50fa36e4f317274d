#!/usr/bin/env bash
# The demo on the embedded default (SQLite in var/, the process sandbox, no servers to
# install): sets up .venv, migrates, runs `manage.py demo` (imports the games, makes the
# demo organizer and attendee and the invite code "welcome", uploads every reference
# player, which is built and validated by self-play, plays a round robin per game and
# prints the standings, opens a Connect Four ladder for online play and prints the command
# that connects a reference agent to it), then serves the site until Ctrl-C: the network
# gateway (`manage.py run_gateway --manager`), which also referees online duels and runs
# the tournament manager in the same process. Builds, validations and duels go through the
# embedded broker (var/broker.sqlite3) to a Celery worker that `manage.py demo` and then
# the gateway each start as a child process and stop when they exit (Ctrl-C included);
# its log is var/log/worker.log. Two LLM players play in the tic-tac-toe
# round robin; their "model" is `python -m llm.local_server` (rule-based, no weights),
# which this script serves on ARENA_DEMO_LLM_PORT (8011) for as long as it runs.
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

# Python keeps each module's bytecode in __pycache__ (git ignores it): with
# PYTHONDONTWRITEBYTECODE set, every command, worker and server the demo starts would
# compile Django and Arena again (a `manage.py check` 4.1-4.8 s instead of 2.1).
unset PYTHONDONTWRITEBYTECODE
scripts/setup.sh
# Arena's data in var/ is owner-only, the logs this script writes there too.
umask 077
.venv/bin/python manage.py migrate --verbosity 0

llm_port=${ARENA_DEMO_LLM_PORT:-8011}
export ARENA_DEMO_LLM_URL=${ARENA_DEMO_LLM_URL:-http://127.0.0.1:$llm_port/v1}
llm_server=
llm_answers() {
  .venv/bin/python -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/models", timeout=2)' \
    "$ARENA_DEMO_LLM_URL" 2>/dev/null
}
if ! llm_answers; then
  mkdir -p var
  .venv/bin/python -m llm.local_server --port "$llm_port" >var/llm-server.log 2>&1 &
  llm_server=$!
  trap '[ -n "$llm_server" ] && kill "$llm_server" 2>/dev/null' EXIT
  for _ in $(seq 50); do llm_answers && break; sleep 0.1; done
fi
# The documentation site that the web site serves at /docs/ (a few seconds).
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --quiet --site-dir var/docs-site \
  || echo "arena demo: the documentation site could not be built; /docs/ says how"
.venv/bin/python manage.py demo --port "$port" ${demo_args[@]+"${demo_args[@]}"}

echo
# The demo's ladder pairs the online agent with the hosted ones after 2 s without an
# online opponent. Each game's standing ladder rates every upload, then rests once its
# entries have played ARENA_STANDING_LADDER_DUELS duels: an idle demo costs no CPU.
export ARENA_ONLINE_FILL_SECONDS=${ARENA_ONLINE_FILL_SECONDS:-2}
serve_command=(.venv/bin/python manage.py run_gateway --manager --port "$port")
if [ "$serve" = 0 ]; then
  echo "Not serving (--no-serve). Start the site with:"
  echo "  ARENA_ONLINE_FILL_SECONDS=$ARENA_ONLINE_FILL_SECONDS ${serve_command[*]}"
  exit 0
fi
echo "Serving http://127.0.0.1:$port/ (admin: http://127.0.0.1:$port/admin/); log in as the"
echo "organizer printed above. Ctrl-C stops the server; run scripts/demo.sh again to come back."
"${serve_command[@]}"
