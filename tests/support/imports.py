"""Which modules a fresh interpreter has imported after running some code: the tests that
guard a start-up's import chain (the command line, a Django process, a served agent) ask
it, so that each names only its code and the modules it watches. Imports no Django: the
Django-free layer's tests use it too."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_after(
    code: str, watched: Sequence[str], *, interpreter_options: Sequence[str] = ()
) -> list[str]:
    """Which of ``watched`` a new ``python -c code`` (run in the repository's root, with
    ``interpreter_options`` such as ``-I``) has in ``sys.modules`` at its end, in the
    order of ``watched``; the test fails with its error output if the code fails."""
    probe = (
        f"{code}\nimport sys\nprint(' '.join(m for m in {tuple(watched)!r} if m in sys.modules))"
    )
    run = subprocess.run(
        [sys.executable, *interpreter_options, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.split()
