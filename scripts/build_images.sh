#!/usr/bin/env bash
# Builds every image a deployment runs, with no container registry: the Debian root file
# system (debootstrap from the Debian mirror, cached in var/cache/base-image), the
# agents' base image on it (`manage.py build_base_image`), and on the same root file
# system the application image (Dockerfile), PostgreSQL's and Redis's
# (images/*.Dockerfile). Each is tagged by the hash of what it is made from and as
# `:deployed` (ARENA_IMAGE_TAG), the tag docker-compose.yml runs; unchanged inputs reuse
# the images (a second run takes seconds). Safe to run again; `docker-compose up -d`
# afterwards recreates the containers whose image changed.
#
# Usage: scripts/build_images.sh          (needs Docker, debootstrap and Python 3.11)
#   ARENA_IMAGE_TAG=name   tag the images name instead of deployed (default: the one
#                          in .env, which docker-compose reads too): deployments, or
#                          test runs, sharing one Docker engine then never run each
#                          other's images
#   ARENA_BUILD_PYTHON=path  a Python with Arena's dependencies installed to run the
#                          build steps with, instead of the .venv scripts/setup.sh makes
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
say() { printf 'arena images: %s\n' "$*" >&2; }
if [ -z "${ARENA_IMAGE_TAG:-}" ] && [ -f .env ]; then
  ARENA_IMAGE_TAG=$(sed -n 's/^ARENA_IMAGE_TAG=//p' .env | tail -1)
fi
deployed=${ARENA_IMAGE_TAG:-deployed}

if [ -n "${ARENA_BUILD_PYTHON:-}" ]; then
  python=$ARENA_BUILD_PYTHON
else
  scripts/setup.sh >&2
  python=.venv/bin/python
fi
say "the agents' base image (the first time: debootstrap, about 1.5 minutes)"
base=$("$python" manage.py build_base_image)
rootfs=$("$python" - <<'PY'
from sandboxes.base_image import base_image_recipe

print(base_image_recipe("debootstrap").rootfs_tag)
PY
)
docker tag "$base" "arena-base:$deployed"

# The hash of every file an image is made from (tracked or not, ignored files left out).
inputs_hash() {
  git ls-files -z --cached --others --exclude-standard -- "$@" | sort -z | xargs -0 sha256sum \
    | sha256sum | cut -c1-16
}
build() {  # name, Dockerfile, context, hash
  local name=$1 dockerfile=$2 context=$3 tag
  tag="$name:$(printf '%s %s' "$rootfs" "$4" | sha256sum | cut -c1-16)"
  if docker image inspect "$tag" >/dev/null 2>&1; then
    say "$tag exists: reused"
  else
    say "building $tag"
    docker build -q --force-rm --build-arg "BASE=$rootfs" -f "$dockerfile" -t "$tag" "$context" >/dev/null
  fi
  docker tag "$tag" "$name:$deployed"
  echo "$tag"
}
# PostgreSQL's and Redis's images need only the root file system: they build meanwhile
# (each mostly waits on its packages' download), their tags written to $work. Jobs still
# running when the script ends early are stopped.
work=$(mktemp -d)
trap 'jobs -p | xargs -r kill 2>/dev/null || true; rm -rf "$work"' EXIT
build arena-postgres images/postgres.Dockerfile images "$(inputs_hash images/postgres*)" \
  > "$work/postgres" &
postgres_job=$!
build arena-redis images/redis.Dockerfile images "$(inputs_hash images/redis*)" > "$work/redis" &
redis_job=$!

# The application's pinned dependencies as wheels, fetched by this machine's pip (its
# index and its configuration, which a build container would not have), so the image is
# built with `pip install --no-index`: nothing is downloaded inside the build.
say "wheels of the pinned dependencies (var/wheelhouse)"
mkdir -p var/wheelhouse
"$python" - > var/wheelhouse/requirements.txt <<'PY'
import tomllib

with open("pyproject.toml", "rb") as handle:
    print("\n".join(tomllib.load(handle)["project"]["dependencies"]))
PY
"$python" -m pip wheel -q --disable-pip-version-check -r var/wheelhouse/requirements.txt \
  -w var/wheelhouse >&2

# The documentation site the web site serves at /docs/ (var/docs-site, copied into the
# application image), built here by this machine's mkdocs: the image has no mkdocs. Built
# while the dependencies' stage is, into $work (the builds meanwhile send this folder to
# the engine), and moved into place before the application's image needs it.
docs_site() {
  if "$python" -m mkdocs --version >/dev/null 2>&1; then
    say "the documentation site (var/docs-site)"
    NO_MKDOCS_2_WARNING=1 "$python" -m mkdocs build --quiet --site-dir "$work/docs-site" >&2
  else
    say "no mkdocs in $python: the image serves no documentation site (/docs/ says so)"
    mkdir -p "$work/docs-site"
  fi
}
docs_site &
docs_job=$!

# The image's Python (Debian's) may need dependencies this machine's does not (markers
# such as python_full_version < "3.11.3"): the dependencies stage says which one it
# misses, this machine's pip fetches it, and the stage is tried again. Every build is
# --force-rm: Docker's classic builder keeps a failed step's container otherwise.
for _ in 1 2 3 4 5 6; do
  if missing=$({ docker build -q --force-rm --build-arg "BASE=$rootfs" --target dependencies . 2>&1 \
      >/dev/null || true; } | sed -n 's/.*No matching distribution found for \([^;]*\).*/\1/p' | head -1) \
      && [ -n "$missing" ]; then
    say "the image's Python also needs $missing: fetching it"
    "$python" -m pip wheel -q --disable-pip-version-check --no-deps "$missing" \
      -w var/wheelhouse >&2
    echo "$missing" >> var/wheelhouse/requirements.txt
  else
    break
  fi
done
wait "$docs_job"
rm -rf var/docs-site
mv "$work/docs-site" var/docs-site
# The application's also names its wheels (their file names carry their versions).
app=$(build arena-app Dockerfile . "$(inputs_hash .) $(ls var/wheelhouse | sha256sum)")
wait "$postgres_job"
wait "$redis_job"
postgres=$(cat "$work/postgres")
redis=$(cat "$work/redis")
say "done: $app, $postgres, $redis and $base, each also tagged :$deployed"
