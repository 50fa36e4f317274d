"""The documentation: the settings page is generated from core/settings.py."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ROOT / "core" / "settings.py"
PAGE = ROOT / "docs" / "operators" / "settings.md"

# scripts/ is no package: the generator is loaded from its file.
spec = importlib.util.spec_from_file_location("settings_table", ROOT / "scripts/settings_table.py")
assert spec and spec.loader
settings_table = importlib.util.module_from_spec(spec)
sys.modules["settings_table"] = settings_table  # its dataclass looks itself up there
spec.loader.exec_module(settings_table)

# Found by their text, independently of the generator's parsing.
READ = re.compile(
    r"\b(?:env_str|env_bool|env_int|env_float|env_list|os\.environ\.get|os\.getenv)\(\s*\"(\w+)\""
)


def test_it_lists_every_setting_core_settings_reads():
    names = set(READ.findall(SETTINGS.read_text(encoding="utf-8")))
    assert len(names) > 70
    rows = set(re.findall(r"^\| `(\w+)` \|", PAGE.read_text(encoding="utf-8"), re.MULTILINE))
    assert names - rows == set()


def test_it_gives_each_setting_a_default_and_a_meaning():
    settings = settings_table.read_settings(SETTINGS.read_text(encoding="utf-8"))
    assert {setting.name for setting in settings if not setting.meaning} == set()
    assert {setting.name for setting in settings if not setting.default} == set()


def test_the_committed_page_is_up_to_date():
    page = PAGE.read_text(encoding="utf-8")
    fresh = settings_table.render_page(page, SETTINGS.read_text(encoding="utf-8"))
    assert fresh == page, f"{PAGE.relative_to(ROOT)} is out of date: run {settings_table.COMMAND}"


def test_the_docs_build_in_the_test_command_counts_every_warning():
    """``--strict`` fails on warnings that are logged: ``--quiet`` stops logging them, and a
    broken link passed CI that way (proved with a planted link: 1 with, 0 without)."""
    command = (ROOT / "scripts" / "test.sh").read_text()
    builds = [line for line in command.splitlines() if "mkdocs build" in line]
    assert builds and all("--strict" in line for line in builds)
    assert not any("--quiet" in line or " -q" in line for line in builds)


def test_the_test_commands_clean_up_keeps_a_green_runs_exit_status():
    """The test command's EXIT trap runs under ``set -e``: a command of it that fails (a
    bare ``kill`` with no lane left) made a run whose every test passed exit 2."""
    script = (ROOT / "scripts" / "test.sh").read_text()
    [trap] = [line for line in script.splitlines() if line.startswith("trap ")]
    for wanted in (0, 3):
        run = subprocess.run(
            ["bash", "-c", f'set -euo pipefail\nlanes="$(mktemp -d)"\n{trap}\nexit {wanted}'],
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert run.returncode == wanted, run.stderr
