#!/bin/bash
# First boot of an Arena machine, run once as root by cloud-init
# (templates/cloud-init.yaml.tftpl): the repository at ARENA_REF in /opt/arena, the
# secrets from SSM Parameter Store into /opt/arena/secrets (scripts/make_secrets.sh, the
# layout docker-compose mounts), the non-secret settings into /opt/arena/.env, then the
# images (scripts/build_images.sh, offline from the Debian mirror). arena.service starts
# the compose files afterwards. Running it again refreshes the checkout, the secrets, the
# settings and the images.
set -euo pipefail
# Fixed on the machines; tests point them at a folder of their own.
etc=${ARENA_ETC:-/etc/arena}
checkout=${ARENA_CHECKOUT:-/opt/arena}
# ARENA_REPOSITORY, ARENA_REF, ARENA_REGION, ARENA_PARAMETER_PREFIX, and on a worker
# CONTROL_HOST (the control machine's private address): written by Terraform, no secret
# among them.
# shellcheck source=/dev/null
. "$etc/boot.env"

say() { printf 'arena-boot: %s\n' "$*" >&2; }

if [ ! -d "$checkout/.git" ]; then
  say "cloning $ARENA_REPOSITORY"
  git clone --quiet "$ARENA_REPOSITORY" "$checkout"
fi
git -C "$checkout" fetch --quiet --tags origin
# A branch is checked out as the remote has it; a tag or a commit as it is.
ref=$ARENA_REF
if git -C "$checkout" rev-parse --verify --quiet "origin/$ARENA_REF^{commit}" >/dev/null; then
  ref=origin/$ARENA_REF
fi
git -C "$checkout" checkout --quiet --detach "$ref"

# A new instance role can take a little while to be usable, so reading is retried.
secret() {
  local attempt
  for attempt in $(seq 1 30); do
    if aws ssm get-parameter --region "$ARENA_REGION" --with-decryption \
      --name "$ARENA_PARAMETER_PREFIX/$1" --query Parameter.Value --output text; then
      return 0
    fi
    say "cannot read $ARENA_PARAMETER_PREFIX/$1 yet (attempt $attempt of 30)"
    sleep 10
  done
  return 1
}

say "reading the secrets from SSM Parameter Store ($ARENA_PARAMETER_PREFIX/...)"
secret_key=$(secret django-secret-key)
secrets_key=$(secret secrets-key)
db_password=$(secret database-password)
redis_password=$(secret redis-password)
# make_secrets.sh lays them out as on any other machine, with the URLs built from them
# (naming the control machine's address on a worker): ./secrets, 0700, owned by root
# (this script's user), each file readable by the containers that mount it.
GIVEN_SECRET_KEY=$secret_key GIVEN_SECRETS_KEY=$secrets_key GIVEN_DB_PASSWORD=$db_password \
  GIVEN_REDIS_PASSWORD=$redis_password CONTROL_HOST=${CONTROL_HOST:-} \
  "$checkout/scripts/make_secrets.sh" >&2

# .env holds settings only: Terraform's, and the docker group's id on this machine (the
# engine proxy runs in it). mktemp and mv replace the old file at once.
docker_gid=$(getent group docker | cut -d: -f3) || { say "no docker group (docker.io)"; exit 1; }
env_file=$(mktemp "$etc/env.XXXXXX")
{
  echo "# Written by arena-boot from $etc/settings.env; the secrets are in ./secrets."
  cat "$etc/settings.env"
  echo "DOCKER_GID=$docker_gid"
} >"$env_file"
chmod 0644 "$env_file"
mv "$env_file" "$checkout/.env"

say "building the images at $(git -C "$checkout" rev-parse --short HEAD)"
cd "$checkout"
scripts/build_images.sh
say "done; arena.service starts the services"
