"""Every package the code imports is a pinned dependency in ``pyproject.toml``: the
platform's own code needs it in ``dependencies``, the tests may have it in the ``dev``
extras. A package that is only there because another one needs it today can go away with
that one's next release."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import TypeGuard

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
#: Not the platform's own Python: runtime files and builds (and below, any hidden folder:
#: the virtual environments, git's).
SKIPPED = {"var", "build"}
#: Where the tests and their helpers live (the ``dev`` extras may serve them).
TEST_CODE = {"tests", "conftest.py"}
#: Development tools outside tests/ that the ``dev`` extras serve too: the documentation
#: site's build hooks (mkdocs.yml).
DEV_TOOLS = {Path("scripts/mkdocs_hooks.py")}


def _python_files() -> list[Path]:
    return [
        path
        for path in ROOT.rglob("*.py")
        if not SKIPPED & set(path.relative_to(ROOT).parts)
        and not any(
            part.startswith(".") or part.endswith(".egg-info")
            for part in path.relative_to(ROOT).parts
        )
    ]


def _first_party() -> set[str]:
    names = {path.name for path in ROOT.iterdir() if path.is_dir()}
    names |= {path.stem for path in ROOT.glob("*.py")}
    return names | {path.name for path in (ROOT / "sdk").iterdir() if path.is_dir()}


def _modules(nodes: list[ast.AST]) -> set[str]:
    modules = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
    return modules


def _type_checking(node: ast.AST) -> TypeGuard[ast.If]:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): only the type checker runs it."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(path: Path) -> tuple[set[str], set[str]]:
    """What the file imports when it runs, and what only for the type checker (a
    development tool: the ``dev`` extras serve it)."""
    tree = ast.parse(path.read_bytes(), str(path))
    for_types = [
        inner
        for node in ast.walk(tree)
        if _type_checking(node)
        for body in node.body
        for inner in ast.walk(body)
    ]
    typing_only = _modules(for_types)
    ids = {id(node) for node in for_types}
    running = _modules([node for node in ast.walk(tree) if id(node) not in ids])
    return running, typing_only - running


def _declared() -> tuple[dict[str, str], dict[str, str]]:
    """(project dependencies, dev extras), each as normalised name to requirement."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def by_name(lines: list[str]) -> dict[str, str]:
        return {canonicalize_name(Requirement(line).name): line for line in lines}

    return by_name(project["dependencies"]), by_name(project["optional-dependencies"]["dev"])


def test_it_declares_every_third_party_package_the_code_imports() -> None:
    first_party = _first_party()
    distributions = packages_distributions()
    runtime, dev = _declared()
    missing = []
    for path in _python_files():
        relative = path.relative_to(ROOT)
        is_test = relative.parts[0] in TEST_CODE or relative in DEV_TOOLS
        running, for_types = _imported(path)
        ours = first_party | set(sys.stdlib_module_names)
        for module, development in sorted(
            [(module, is_test) for module in running - ours]
            + [(module, True) for module in for_types - ours]
        ):
            names = {canonicalize_name(name) for name in distributions.get(module, [module])}
            declared = runtime.keys() | (dev.keys() if development else set())
            if not names & declared:
                where = "dev extras" if development else "dependencies"
                missing.append(f"{path.relative_to(ROOT)}: {module} ({where})")

    assert missing == []


def test_it_pins_every_dependency() -> None:
    runtime, dev = _declared()

    assert [line for line in (*runtime.values(), *dev.values()) if "==" not in line] == []
