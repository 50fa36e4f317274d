#!/bin/bash
# First boot of an Arena machine, run once by cloud-init (templates/cloud-init.yaml.tftpl):
# the secrets from SSM Parameter Store into /etc/arena/arena.env, the repository at
# ARENA_REF in /opt/arena with that file as its .env, then the images
# (scripts/build_images.sh, offline from the Debian mirror). arena.service starts the
# services afterwards. Running it again refreshes the env file, the checkout and the images.
set -euo pipefail
# ARENA_REPOSITORY, ARENA_REF, ARENA_REGION, ARENA_PARAMETER_PREFIX, ARENA_DATABASE_HOST,
# ARENA_REDIS_HOST: written by Terraform, no secret among them.
# shellcheck source=/dev/null
. /etc/arena/boot.env

say() { printf 'arena-boot: %s\n' "$*" >&2; }

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
database_password=$(secret database-password)
redis_password=$(secret redis-password)

# mktemp makes the file readable by root only; mv replaces the old one at once.
env_file=$(mktemp /etc/arena/arena.env.XXXXXX)
{
  echo "# Written by arena-boot from /etc/arena/settings.env and SSM Parameter Store."
  cat /etc/arena/settings.env
  echo "ARENA_SECRET_KEY=$secret_key"
  echo "ARENA_SECRETS_KEY=$secrets_key"
  echo "POSTGRES_USER=arena"
  echo "POSTGRES_DB=arena"
  echo "POSTGRES_PASSWORD=$database_password"
  echo "REDIS_PASSWORD=$redis_password"
  echo "DATABASE_URL=postgres://arena:$database_password@$ARENA_DATABASE_HOST:5432/arena"
  echo "ARENA_BROKER_URL=redis://:$redis_password@$ARENA_REDIS_HOST:6379/0"
  echo "ARENA_ONLINE_BUS_URL=redis://:$redis_password@$ARENA_REDIS_HOST:6379/1"
} >"$env_file"
mv "$env_file" /etc/arena/arena.env

if [ ! -d /opt/arena/.git ]; then
  say "cloning $ARENA_REPOSITORY"
  git clone --quiet "$ARENA_REPOSITORY" /opt/arena
fi
git -C /opt/arena fetch --quiet --tags origin
# A branch is checked out as the remote has it; a tag or a commit as it is.
ref=$ARENA_REF
if git -C /opt/arena rev-parse --verify --quiet "origin/$ARENA_REF^{commit}" >/dev/null; then
  ref=origin/$ARENA_REF
fi
git -C /opt/arena checkout --quiet --detach "$ref"
ln -sfn /etc/arena/arena.env /opt/arena/.env

say "building the images at $(git -C /opt/arena rev-parse --short HEAD)"
cd /opt/arena
scripts/build_images.sh
say "done; arena.service starts the services"
