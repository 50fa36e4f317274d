#!/bin/sh
# The compose stack's nginx service: renders the configuration from this site's settings
# (the same settings as the web service's), then runs nginx in the foreground as the
# image's non-root user. Options go to `manage.py nginx_config` (see its --help), e.g.
# nginx/start.sh --web 10.0.0.5:8000. ARENA_NGINX_RUNTIME_DIR: where the configuration,
# pid and temporary files go (default /tmp/arena-nginx).
set -eu
cd "$(dirname "$0")/.."
runtime=${ARENA_NGINX_RUNTIME_DIR:-/tmp/arena-nginx}
mkdir -p "$runtime"
"${PYTHON:-python}" manage.py nginx_config --runtime-dir "$runtime" --output "$runtime/nginx.conf" "$@"
exec nginx -e stderr -c "$runtime/nginx.conf"
