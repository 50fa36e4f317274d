#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (what CI runs, through .ci/run).
# Extra arguments go to pytest, e.g. scripts/test.sh -k hostile
set -euo pipefail
cd "$(dirname "$0")/.."
# Python keeps each module's bytecode (and pytest each test module's rewritten asserts) in
# __pycache__, which git ignores: with PYTHONDONTWRITEBYTECODE set, every one of the run's
# Python processes would compile them again (a test process's collection 22 CPU-s instead
# of 9, every worker's and command's start 50 ms more).
unset PYTHONDONTWRITEBYTECODE
scripts/setup.sh --system-packages
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# The docker sandbox's base image, built or reused (the first build runs debootstrap, about
# 1.5 minutes), its progress shown on the run's own output (fd 3) whatever lane builds it.
# When it cannot be built the tests that need it say why. With arguments it is made before
# the tests; without, by the stack's lane, which needs it first, while the other lanes
# start: a test of theirs that needs it meanwhile waits for that build (one build at a
# time per cache folder, sandboxes.base_image's lock), and the rest never wait.
exec 3>&1
base_image() {
  if timeout 10 docker version >/dev/null 2>&1; then
    .venv/bin/python manage.py build_base_image 2>&3 >/dev/null \
      || echo "arena test: the base image could not be built; the docker sandbox tests will say why" >&3
  fi
}
# The slower checks: types, the layers contract, and the documentation site, strict (a
# broken link or anchor, or a page missing from the nav, fails; built into a temporary
# folder; the settings page's freshness is a test). With arguments (e.g. -k hostile)
# they run first and everything else runs in .venv in one process, as pytest would;
# without, in the background beside the tests (a lane of their own).
# Each check's failure is counted here: called as `checks || status=$?`, bash runs a
# function without `set -e`, and a failed mypy would otherwise pass unseen.
checks() {
  local docs_site failed=0
  .venv/bin/mypy || failed=1
  .venv/bin/lint-imports || failed=1
  docs_site="$(mktemp -d)"
  NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$docs_site" || failed=1
  rm -rf "$docs_site"
  return "$failed"
}
# Tools the tests run but never import (checkov, for terraform/), in their own .venv-tools.
if [ $# -gt 0 ]; then
  base_image
  scripts/setup_tools.sh
  checks
  exec .venv/bin/pytest "$@"
fi
# Four lanes at once, each in its own processes, so that one's waits (agents, servers,
# containers, health checks) are spent on another's work, and each about as long:
# - the checks above, then the tools' virtualenv and the modules of AFTER_CHECKS;
# - the base image, then the production stack (tests/deploy/test_stack*.py: a compose
#   deployment built,
#   started, killed and restored), which mostly waits on containers, then the round robin
#   benchmark's smoke run and the docker builds' tests (they wait on builds too);
# - the Django-free layer (referee, sandboxes, environments, the SDK, the example
#   players) in a virtualenv without Django (made first, in the lane), which proves it
#   imports none, in two test processes (its tests mostly wait on agents' clocks: alone on
#   a quiet machine, 13:57 in one process at 14 % of a core, 7:12 in two), then the
#   pipeline's recovery from killed workers;
# - everything else in .venv, in two test processes (pytest-xdist), a module to each
#   (three, tried, oversubscribed two cores: every lane took 25 % to 90 % longer).
# The lanes beside the main one write to logs that are shown when they end; the run
# fails if any lane does.
PURE_TESTS=(tests/referee tests/sandboxes tests/llm tests/environments tests/sdk tests/example_players tests/engine_proxy)
STACK_TESTS=(tests/deploy/test_stack*.py)
# The anonymous and WSGI fuzzing are the main lane's: on a fresh machine (CI's) the
# stack's lane builds every image first, and with them the stack's and the Django-free
# lanes ended 4 minutes after the main one (run 22, images removed before it).
# (With the ladder, scale, LLM and upload benchmarks' smoke runs after them too, the stack's
# lane ended last in runs 7 and 8, every image removed first: they are the main lane's.)
AFTER_STACK=(tests/bench/test_bench_round_robin.py tests/builder/test_docker_build.py)
# The docker sandbox's forked agents in the referee's and sandboxes' suites (the
# docker-forked kind of any_backend, and a worker that cannot see its agents' processes)
# run in the stack's lane too, beside its tests: they mostly wait on containers and
# clocks, and with them the Django-free lane was the longest (when it ran in one process).
DOCKER_FORKED="docker-forked or processes_are_not_seen"
# After the Django-free layer (two processes, mostly waiting: it ended 6 minutes before
# the main lane), the pipeline's recovery, the soak benchmark's smoke run (2:42), and the
# pipelines of a worker and of the manager (from the main lane, which was the longest).
AFTER_PURE=(tests/tournament_manager/test_pipeline_recovery.py tests/bench/test_bench_soak.py
  tests/duel_runner/test_celery_pipeline.py tests/tournament_manager/test_manager_pipeline.py)
# After the checks, in one process: the terraform tests (checkov, in .venv-tools), the two
# modules that start a second Docker engine (one after the other), the embedded server's
# and the demo's (which mostly wait), and the fuzzing with tokens.
AFTER_CHECKS=(tests/deploy/test_terraform.py tests/bench/test_bench_hosts.py
  tests/duel_runner/test_second_host.py tests/edge/test_embedded_server.py
  tests/commands/test_demo.py tests/api/test_fuzzing_tokens.py)
lanes="$(mktemp -d)"
# Lanes still running when the script ends early are stopped. (A bare `kill $(jobs -p)`
# with no job left fails, and under `set -e` its status 2 became the run's: a green run
# exited 2.)
trap 'jobs -p | xargs -r kill 2>/dev/null || true; rm -rf "$lanes"' EXIT
# Each lane runs all its steps and fails if any of them did.
lane_pytest() {
  .venv/bin/pytest -p no:cacheprovider --durations=10 "$@"
}
checks_lane() {
  local status=0
  checks || status=$?
  scripts/setup_tools.sh || status=$?
  lane_pytest "${AFTER_CHECKS[@]}" || status=$?
  return "$status"
}
stack_lane() {
  local status=0 forked
  base_image
  # The forked agents' tests beside the stack's, which mostly wait on its containers: after
  # them, they ended the stack's lane 2.5 minutes after the others (run 10, 28:06), on two
  # cores 20 % busy.
  lane_pytest tests/referee tests/sandboxes -k "$DOCKER_FORKED" >"$lanes/stack-forked.log" 2>&1 &
  forked=$!
  lane_pytest "${STACK_TESTS[@]}" || status=$?
  lane_pytest "${AFTER_STACK[@]}" || status=$?
  wait "$forked" || status=$?
  echo "arena test: the docker sandbox's forked agents (beside the stack's tests)"
  cat "$lanes/stack-forked.log"
  return "$status"
}
pure_lane() {
  local status=0
  scripts/setup_pure.sh || return
  .venv-pure/bin/python -m pytest -p no:cacheprovider -n 2 --dist loadfile \
    -o addopts="-ra --strict-markers --import-mode=importlib" --durations=20 \
    -k "not ($DOCKER_FORKED)" "${PURE_TESTS[@]}" \
    || status=$?
  lane_pytest "${AFTER_PURE[@]}" || status=$?
  return "$status"
}
declare -A lane_pids
# Starts the lane $1 (the function ${1}_lane), which runs $2, writing to its log.
lane_start() {
  echo "arena test: $2, in the background (shown when done)"
  "${1}_lane" >"$lanes/$1.log" 2>&1 &
  lane_pids[$1]=$!
}
lane_start checks "types, layers and the docs site, then ${AFTER_CHECKS[*]}"
lane_start stack "the production stack, then ${AFTER_STACK[*]}; beside them, the docker sandbox's forked agents"
lane_start pure "the Django-free layer (.venv-pure, no Django installed), then ${AFTER_PURE[*]}"
echo "arena test: everything else, in .venv, two test processes"
status=0
.venv/bin/pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=40 \
  "${PURE_TESTS[@]/#/--ignore=}" "${STACK_TESTS[@]/#/--ignore=}" \
  "${AFTER_STACK[@]/#/--ignore=}" "${AFTER_PURE[@]/#/--ignore=}" \
  "${AFTER_CHECKS[@]/#/--ignore=}" || status=$?
for lane in checks pure stack; do
  lane_status=0
  wait "${lane_pids[$lane]}" || lane_status=$?
  echo "arena test: the ${lane} lane's output"
  cat "$lanes/$lane.log"
  if [ "$lane_status" -ne 0 ]; then
    echo "arena test: the ${lane} lane failed (exit code $lane_status)"
    status=1
  fi
done
exit "$status"
