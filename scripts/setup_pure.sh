#!/usr/bin/env bash
# A virtualenv without Django (.venv-pure) for the Django-free layer's tests: the
# dependencies named in pyproject.toml's [tool.arena] pure-layer-dependencies, at the
# versions pinned there, and the SDK. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
stamp=.venv-pure/.arena-installed
wanted=$(cat pyproject.toml sdk/pyproject.toml | sha256sum | cut -c1-16)
[ -x .venv-pure/bin/python ] || "$PYTHON" -m venv .venv-pure
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "arena setup: installing the Django-free layer's dependencies into .venv-pure"
  requirements=$("$PYTHON" - <<'PY'
import re
import tomllib

with open("pyproject.toml", "rb") as handle:
    project = tomllib.load(handle)
wanted = {name.lower() for name in project["tool"]["arena"]["pure-layer-dependencies"]}
pinned = project["project"]["dependencies"] + project["project"]["optional-dependencies"]["dev"]
for requirement in pinned:
    name = re.split(r"[\[=<>!~ ]", requirement, maxsplit=1)[0].lower()
    if name in wanted:
        print(requirement)
PY
)
  # No bytecode compiled ahead (pip compiles every file one by one, 11 of the install's 34
  # CPU-s): the tests write it for the modules they import, and the agents they start
  # confined run on Debian's Python (sandboxes/process.py), not this one (unconfined, where
  # bubblewrap is missing, an agent under another user id compiles what it imports).
  # shellcheck disable=SC2086
  .venv-pure/bin/python -m pip install -q --no-compile $requirements -e ./sdk
  echo "$wanted" > "$stamp"
fi
