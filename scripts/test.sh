#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (what CI runs, through .ci/run).
# Extra arguments go to pytest, e.g. scripts/test.sh -k hostile
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --system-packages
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports
# The docker sandbox's base image, built or reused before the tests so its progress is
# shown (the first build runs debootstrap, about 1.5 minutes). When it cannot be built
# the tests that need it say why.
if timeout 10 docker version >/dev/null 2>&1; then
  .venv/bin/python manage.py build_base_image >/dev/null \
    || echo "arena test: the base image could not be built; the docker sandbox tests will say why"
fi
exec .venv/bin/pytest "$@"
