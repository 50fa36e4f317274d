#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (what CI runs, through .ci/run).
# Extra arguments go to pytest, e.g. scripts/test.sh -k hostile
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --system-packages
# Tools the tests run but never import (checkov, for terraform/), in their own .venv-tools.
scripts/setup_tools.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/lint-imports
# The documentation site, strict: a broken link or anchor, or a page missing from the nav,
# fails. Built into a temporary folder; the settings page's freshness is a test.
docs_site="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$docs_site"
rm -rf "$docs_site"
# The docker sandbox's base image, built or reused before the tests so its progress is
# shown (the first build runs debootstrap, about 1.5 minutes). When it cannot be built
# the tests that need it say why.
if timeout 10 docker version >/dev/null 2>&1; then
  .venv/bin/python manage.py build_base_image >/dev/null \
    || echo "arena test: the base image could not be built; the docker sandbox tests will say why"
fi
# The Django-free layer (referee, sandboxes, environments, the SDK, the example players)
# runs its tests in a virtualenv without Django, which proves it imports none; the rest
# runs in .venv. With arguments (e.g. -k hostile) everything runs in .venv, as pytest
# would.
PURE_TESTS=(tests/referee tests/sandboxes tests/llm tests/environments tests/sdk tests/example_players tests/engine_proxy)
if [ $# -eq 0 ]; then
  scripts/setup_pure.sh
  echo "arena test: the Django-free layer, in .venv-pure (no Django installed)"
  .venv-pure/bin/python -m pytest -p no:cacheprovider \
    -o addopts="-ra --strict-markers --import-mode=importlib" "${PURE_TESTS[@]}"
  echo "arena test: everything else, in .venv"
  exec .venv/bin/pytest "${PURE_TESTS[@]/#/--ignore=}"
fi
exec .venv/bin/pytest "$@"
