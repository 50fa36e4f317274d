#!/usr/bin/env bash
# Sets everything up on the embedded default (SQLite, process sandbox, no servers)
# and runs the main job: validate the reference players by self-play, then play a
# round robin per game with the referee, printing standings. Duel documents (with
# every match's seed and actions, enough to replay it) go to var/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/python manage.py migrate --verbosity 0
for game in connect_four tic_tac_toe quarto rock_paper_scissors sum_to_10; do
  echo
  echo "=== $game ==="
  .venv/bin/python -m duel_runner round-robin "$game" example_players/"$game"/* \
    --seed 2026 --output var/demo
done
echo
echo "Duel documents written to var/demo/. Replay one with:"
echo "  .venv/bin/python -m duel_runner replay var/demo/connect_four-minimax-vs-random_player.json"
