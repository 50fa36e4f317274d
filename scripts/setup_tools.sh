#!/usr/bin/env bash
# A virtualenv for the command-line tools the tests run but never import (.venv-tools):
# pyproject.toml's [tool.arena] tool-dependencies, at the versions pinned there. They
# stay out of .venv because their own pins clash with the project's. Safe to run again:
# it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
stamp=.venv-tools/.arena-installed
wanted=$(sha256sum pyproject.toml | cut -c1-16)
[ -x .venv-tools/bin/python ] || "$PYTHON" -m venv .venv-tools
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "arena setup: installing the tools into .venv-tools"
  requirements=$("$PYTHON" -c '
import tomllib

with open("pyproject.toml", "rb") as handle:
    print(" ".join(tomllib.load(handle)["tool"]["arena"]["tool-dependencies"]))
')
  # Bytecode is made when a module is first imported, and kept: most of the tools'
  # packages' files are never imported.
  # shellcheck disable=SC2086
  .venv-tools/bin/python -m pip install -q --no-compile $requirements
  echo "$wanted" > "$stamp"
fi
