#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (what CI runs, through .ci/run).
# Extra arguments go to pytest, e.g. scripts/test.sh -k hostile
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --system-packages
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/pytest "$@"
