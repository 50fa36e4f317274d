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
# Three lanes at once, each in its own processes, so that one's waits (agents, servers,
# containers, health checks) are spent on another's work:
# - the production stack (tests/deploy/test_stack*.py: a compose deployment built,
#   started, killed and restored), which mostly waits on containers;
# - the Django-free layer (referee, sandboxes, environments, the SDK, the example
#   players) in a virtualenv without Django, which proves it imports none;
# - everything else in .venv, in two test processes (pytest-xdist), a module to each
#   (three, tried, oversubscribed two cores: every lane took 25 % to 90 % longer).
# The first two write to logs that are shown when they end; the run fails if any lane
# does. With arguments (e.g. -k hostile) everything runs in .venv in one process, as
# pytest would.
PURE_TESTS=(tests/referee tests/sandboxes tests/llm tests/environments tests/sdk tests/example_players tests/engine_proxy)
STACK_TESTS=(tests/deploy/test_stack*.py)
if [ $# -gt 0 ]; then
  exec .venv/bin/pytest "$@"
fi
scripts/setup_pure.sh
lanes="$(mktemp -d)"
# Lanes still running when the script ends early are stopped. (A bare `kill $(jobs -p)`
# with no job left fails, and under `set -e` its status 2 became the run's: a green run
# exited 2.)
trap 'jobs -p | xargs -r kill 2>/dev/null || true; rm -rf "$lanes"' EXIT
echo "arena test: the production stack, in the background (log shown when it ends)"
.venv/bin/pytest -p no:cacheprovider --durations=10 "${STACK_TESTS[@]}" >"$lanes/stack.log" 2>&1 &
stack=$!
echo "arena test: the Django-free layer, in .venv-pure (no Django installed), in the background"
.venv-pure/bin/python -m pytest -p no:cacheprovider \
  -o addopts="-ra --strict-markers --import-mode=importlib" --durations=20 "${PURE_TESTS[@]}" \
  >"$lanes/pure.log" 2>&1 &
pure=$!
echo "arena test: everything else, in .venv, two test processes"
status=0
.venv/bin/pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=40 "${PURE_TESTS[@]/#/--ignore=}" \
  "${STACK_TESTS[@]/#/--ignore=}" || status=$?
for lane in pure stack; do
  lane_status=0
  wait "${!lane}" || lane_status=$?
  echo "arena test: the ${lane} lane's output"
  cat "$lanes/$lane.log"
  if [ "$lane_status" -ne 0 ]; then
    echo "arena test: the ${lane} lane failed (exit code $lane_status)"
    status=1
  fi
done
exit "$status"
