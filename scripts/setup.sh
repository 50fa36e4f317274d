#!/usr/bin/env bash
# Installs what Arena needs on a Debian machine: system packages when root, then
# a virtualenv in .venv with the pinned Python dependencies. Safe to run again:
# it skips whatever is already there. Usage: scripts/setup.sh [--system-packages]
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
want_system=0
[ "${1:-}" = "--system-packages" ] && want_system=1

say() { printf 'arena setup: %s\n' "$*"; }

# Debian packages for the test suite: Node.js (the non-Python example agent), a system
# Python with NumPy (what agents run on, as in the sandbox image), the PostgreSQL server
# (the tests start a throwaway cluster with its binaries), Chromium (browser tests), Redis
# (the broker of the Celery pipeline tests, started throwaway too), nginx with openssl
# (the production proxy's configuration, run throwaway on loopback, HTTPS with a
# self-signed certificate, as the LLM client's TLS tests have too), Debian's Docker
# engine with debootstrap (the docker sandbox and its base image, built from the Debian
# mirror because no container registry is reachable), and Debian's docker-compose (the
# deployment's compose files are checked with it).
missing=()
# bubblewrap confines the process sandbox's agents (the embedded default's): wanted by the
# demo too, so installed whenever root can (without it Arena says so and accepts uploads
# from organizers only).
command -v bwrap >/dev/null || missing+=(bubblewrap)
if [ "$want_system" = 1 ]; then
  command -v node >/dev/null || missing+=(nodejs)
  /usr/bin/python3 -c 'import numpy' 2>/dev/null || missing+=(python3-numpy)
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  command -v redis-server >/dev/null || missing+=(redis-server)
  [ -x /usr/sbin/nginx ] || missing+=(nginx)
  command -v openssl >/dev/null || missing+=(openssl)
  [ -x /usr/sbin/dockerd ] || missing+=(docker.io)
  [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
fi
"$PYTHON" -m venv --help >/dev/null 2>&1 && "$PYTHON" -c 'import ensurepip' 2>/dev/null \
  || missing+=(python3-venv)
system_packages_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [[ " ${missing[*]} " == *" postgresql "* ]] && command -v pg_lsclusters >/dev/null; then
    # The package creates and may start a default cluster; the tests never use it
    # (they start their own), so leave no server running that we did not ask for.
    pg_lsclusters --no-header | while read -r version name _port status _rest; do
      if [ "$status" = online ]; then pg_ctlcluster "$version" "$name" stop || true; fi
    done
  fi
  if [[ " ${missing[*]} " == *" nginx "* ]]; then
    # Likewise the package may start a server on port 80 (and at every boot): the tests
    # run their own nginx on loopback.
    if command -v systemctl >/dev/null && systemctl is-enabled --quiet nginx 2>/dev/null; then
      systemctl disable --now nginx >/dev/null 2>&1 || true
    fi
    /usr/sbin/nginx -s quit 2>/dev/null || true
  fi
}
# The packages install while the virtualenv below is made (both mostly wait on downloads),
# unless the virtualenv needs one of them (python3-venv); the Docker engine waits for them.
packages_pid=
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing ${missing[*]}"
    if [[ " ${missing[*]} " == *" python3-venv "* ]]; then
      system_packages_install
    else
      system_packages_install &
      packages_pid=$!
    fi
  else
    say "not root: skipping system packages ${missing[*]} (tests that need them will say so)"
  fi
fi

stamp=.venv/.arena-installed
wanted=$(cat pyproject.toml sdk/pyproject.toml | sha256sum | cut -c1-16)
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $("$PYTHON" --version)"
  "$PYTHON" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  say "installing Python dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # No bytecode compiled ahead (its 11,000 files took 56 CPU-s, most of them never
  # imported): each process writes it for the modules it imports, once (Arena's own and
  # PyYAML's are compiled below). Confined agents
  # run on Debian's Python (sandboxes/process.py), not this one; unconfined, where
  # bubblewrap is missing, an agent under another user id compiles what it imports.
  .venv/bin/python -m pip install -q --no-compile -e ".[dev]" -e ./sdk
  echo "$wanted" > "$stamp"
fi

# Bytecode for Arena's own modules and for PyYAML (the command line reads each game's
# info.yml), written whatever PYTHONDONTWRITEBYTECODE says: where it is set (many images
# and CI machines set it) no process would ever write it, and every start would compile
# them again (a 1-match duel from the command line 0.36-0.42 s instead of 0.26-0.33).
# Up-to-date files are skipped: about 0.4 s when nothing changed. The example players are
# agents: they run on the agents' Python, in their sandbox, from a copy.
arena_packages=()
for init in */__init__.py; do
  [ "${init%/__init__.py}" = example_players ] || arena_packages+=("${init%/__init__.py}")
done
yaml_folder=$(.venv/bin/python -c 'import os, yaml; print(os.path.dirname(yaml.__file__))')
if ! .venv/bin/python -m compileall -q -j 0 manage.py sdk/arena_sdk "${arena_packages[@]}" \
  "$yaml_folder" >/dev/null; then
  say "could not compile every Arena module ahead (a read-only folder, or a file that does not parse): commands start slower"
fi

# The system packages, if they were installed meanwhile (a failure there fails the setup).
if [ -n "$packages_pid" ]; then
  wait "$packages_pid"
fi

# The Docker engine: started here when root and nothing answers, in the background so it
# outlives this script (the tests use it), with its log in var/log/dockerd.log.
docker_answers() {
  command -v docker >/dev/null && timeout 10 docker version >/dev/null 2>&1
}
if [ "$want_system" = 1 ] && [ -z "${DOCKER_HOST:-}" ] && ! docker_answers; then
  if [ "$(id -u)" = 0 ] && [ -x /usr/sbin/dockerd ]; then
    # var/ is Arena's private data (core/private_data.py): owner-only from the start.
    (umask 077 && mkdir -p var/log && touch var/log/dockerd.log)
    say "starting dockerd in the background (log: var/log/dockerd.log)"
    setsid nohup /usr/sbin/dockerd >>var/log/dockerd.log 2>&1 </dev/null &
    for _ in $(seq 1 120); do
      docker_answers && break
      sleep 0.5
    done
    docker_answers || say "dockerd did not answer within 60 s: see var/log/dockerd.log"
  else
    say "not root: not starting a Docker engine (the docker sandbox tests will say so)"
  fi
fi
