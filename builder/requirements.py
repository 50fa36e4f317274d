"""The Python dependencies of an upload: ``requirements.txt`` checked, wheels downloaded.

A revision's image is built with no network, so whatever it installs is downloaded
here first, on the host, with pip, for the Python of the base image (CPython 3.11 on
manylinux, this host's architecture). The rules, each refused with a message the
owner can act on:

- plain requirements only, ``name[extras] specifier ; marker``: no URLs, paths,
  editable installs or pip options, which could reach other indexes or host files;
- binary wheels only (``--only-binary=:all:``): an sdist would run its build code
  here, on the host;
- the organizers' deny list, then allow list (``ARENA_REQUIREMENTS_DENY`` and
  ``ARENA_REQUIREMENTS_ALLOW``), on every name in the file and every wheel pip
  brings, dependencies included;
- a cap on the size of the download (``ARENA_WHEELS_MAX_BYTES``), watched while pip
  runs, and the build's deadline.

NumPy: the base image has Debian's. A requirement naming numpy that this version
satisfies becomes a constraint pinning it, so the other wheels resolve against it and
no second NumPy is installed; a numpy wheel at exactly that version is never
installed. Any other NumPy (one the requirement asks for and the base's is not, or a
dependency's choice when the file does not name numpy) is installed with the other
wheels, ahead of Debian's on the path: correct, at the cost of the space.

Downloads are kept in ``ARENA_WHEEL_CACHE``: one folder per set of requirements (and
pip's HTTP cache), so the next revision with the same file downloads nothing. A set
whose requirements all pin a version with ``==`` is reused as long as it is used; any
other set is resolved again the next day, to pick up new releases.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from django.conf import settings
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from core.errors import ArenaError

TARGET_PYTHON = "3.11"
TARGET_ABI = "cp311"
#: pip itself: run from its wheel inside the build, as the base image has no pip.
PIP_VERSION = "26.3"
#: Debian bookworm's glibc is 2.36: wheels for any manylinux up to it run there.
GLIBC_MINOR = 36
#: A set of wheels with a requirement that is not ``==`` is resolved again after this.
UNPINNED_REUSE = datetime.timedelta(days=1)
#: Unused sets of wheels (and pip's cached downloads) are removed after this.
CACHE_KEEP = datetime.timedelta(days=7)
COMPLETE = ".complete"
#: Names pip would take for a file to install rather than a project on the index.
ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
ADVICE = (
    "Only binary wheels for CPython 3.11 on Linux can be installed: check each name "
    "and version on PyPI."
)


class RequirementsRejected(ArenaError):
    """requirements.txt cannot be installed; the message says what to change."""


class BuildTimedOut(ArenaError):
    """The build ran out of time (``ARENA_BUILD_TIMEOUT_SECONDS``)."""


@dataclasses.dataclass(frozen=True)
class RequirementsPolicy:
    """What the organizers allow: names denied, names allowed (empty: any), total size."""

    max_bytes: int
    deny: frozenset[NormalizedName] = frozenset()
    allow: frozenset[NormalizedName] = frozenset()

    @classmethod
    def create(
        cls, *, max_bytes: int, deny: Iterable[str] | str = (), allow: Iterable[str] | str = ()
    ) -> RequirementsPolicy:
        """Names as given in settings: a list, or one comma-separated string."""

        def names(value: Iterable[str] | str) -> frozenset[NormalizedName]:
            items = value.split(",") if isinstance(value, str) else value
            return frozenset(canonicalize_name(item.strip()) for item in items if item.strip())

        return cls(max_bytes=max_bytes, deny=names(deny), allow=names(allow))

    def refusal(self, name: str) -> str | None:
        """Why the project ``name`` may not be installed; None if it may."""
        project = canonicalize_name(name)
        if project in self.deny:
            return f"the package {name!r} is not allowed on this platform"
        if self.allow and project not in self.allow:
            allowed = ", ".join(sorted(self.allow))
            return f"the package {name!r} is not on the list of allowed packages ({allowed})"
        return None


def requirements_policy() -> RequirementsPolicy:
    return RequirementsPolicy.create(
        max_bytes=settings.ARENA_WHEELS_MAX_BYTES,
        deny=settings.ARENA_REQUIREMENTS_DENY,
        allow=settings.ARENA_REQUIREMENTS_ALLOW,
    )


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    """(first line number, line) with comments removed and continuations joined, as pip."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        line = re.sub(r"(^|\s)#.*$", "", raw)
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        yield start, ("".join(pending) + line).strip()
        pending = []
    if pending:
        yield start, "".join(pending).strip()


def requirements_parse(text: str, *, policy: RequirementsPolicy) -> list[Requirement]:
    """The requirements of a ``requirements.txt``; raises RequirementsRejected with the line."""
    requirements = []
    for number, line in _logical_lines(text):
        if not line:
            continue
        where = f"requirements.txt line {number} ({line[:80]!r})"
        if line.startswith("-"):
            raise RequirementsRejected(
                f"{where}: pip options (-e, -r, --index-url, -f...) are not allowed; "
                "list one package per line as name[extras] version, e.g. six==1.16.0"
            )
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            raise RequirementsRejected(
                f"{where} is not a requirement of the form name[extras] version, e.g. "
                "six==1.16.0; URLs, file paths and pip options are not allowed"
            ) from None
        if requirement.url:
            raise RequirementsRejected(
                f"{where}: URLs are not allowed; name a package from PyPI with a version, "
                "e.g. six==1.16.0"
            )
        if requirement.name.lower().endswith(ARCHIVE_SUFFIXES):
            raise RequirementsRejected(
                f"{where}: files are not allowed; name a package from PyPI with a version"
            )
        refusal = policy.refusal(requirement.name)
        if refusal:
            raise RequirementsRejected(f"{where}: {refusal}; remove it")
        requirements.append(requirement)
    return requirements


@dataclasses.dataclass(frozen=True)
class WheelSet:
    """The wheels a revision's image installs, all in one folder."""

    folder: Path
    #: File names (in ``folder``) of the wheels to install.
    wheels: tuple[str, ...]
    #: pip's own wheel, which installs them (None when there is nothing to install).
    pip_wheel: Path | None
    total_bytes: int
    #: True when the set came from the cache and nothing was downloaded.
    reused: bool


def _target_options() -> list[str]:
    machine = platform.machine()  # the Docker engine runs on this host
    platforms = [f"manylinux_2_{minor}_{machine}" for minor in range(GLIBC_MINOR, 4, -1)]
    if machine == "x86_64":
        platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    elif machine == "aarch64":
        platforms += ["manylinux2014_aarch64"]
    options = ["--only-binary=:all:", "--python-version", TARGET_PYTHON]
    options += ["--implementation", "cp", "--abi", TARGET_ABI]
    for tag in platforms:
        options += ["--platform", tag]
    return options


def cache_root() -> Path:
    return Path(settings.ARENA_WHEEL_CACHE)


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}".replace(".0 ", " ")
    return f"{count} bytes"


def _too_large(max_bytes: int) -> RequirementsRejected:
    return RequirementsRejected(
        f"requirements.txt: the dependencies are larger than {_size(max_bytes)}, the limit; "
        "use fewer or smaller packages"
    )


def _folder_bytes(folder: Path) -> int:
    total = 0
    for directory, _, files in os.walk(folder):
        for name in files:
            # pip moves and deletes files while they are counted.
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_size
    return total


def _pip_download(
    arguments: list[str],
    *,
    destination: Path,
    deadline: float,
    max_bytes: int,
    report: Callable[[str], None],
) -> None:
    """``pip download`` into ``destination``, killed past ``deadline`` or ``max_bytes``.

    pip streams each file into its temporary folder before saving any into
    ``destination``, so its TMPDIR is watched too: a huge wheel is stopped mid-way.
    """
    work = destination.parent / f"{destination.name}.work"
    (work / "tmp").mkdir(parents=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        "--retries",
        "2",
        "--timeout",
        "15",
        "--cache-dir",
        str(cache_root() / "http"),
        "--dest",
        str(destination),
        *_target_options(),
        *arguments,
    ]
    environment = {**os.environ, "TMPDIR": str(work / "tmp")}
    try:
        with open(work / "pip.log", "w+b") as output:
            process = subprocess.Popen(
                command,
                cwd=work,  # never a folder of the upload: pip takes local folders for projects
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                while process.poll() is None:
                    if time.monotonic() > deadline:
                        raise BuildTimedOut("downloading the dependencies")
                    if _folder_bytes(destination) + _folder_bytes(work / "tmp") > max_bytes:
                        raise _too_large(max_bytes)
                    time.sleep(0.1)
            finally:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            output.seek(0)
            text = output.read().decode("utf-8", errors="replace")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in text.splitlines():
        if line.startswith(("Saved ", "Collecting ", "ERROR:")):
            report(f"pip: {line.strip()}")
    if process.returncode != 0:
        errors = [line for line in text.splitlines() if line.startswith("ERROR:")]
        detail = "\n".join(errors[-10:]) or "\n".join(text.strip().splitlines()[-10:])
        raise RequirementsRejected(
            f"requirements.txt: pip could not get the dependencies:\n{detail}\n{ADVICE}"
        )


def _set_key(lines: list[str], constraints: list[str]) -> str:
    digest = hashlib.sha256()
    pinned = all(re.fullmatch(r"[^=<>!~;]+==[^=*,;]+(;.*)?", line) for line in lines)
    parts = [
        "v1",
        PIP_VERSION,
        *_target_options(),
        "requirements",
        *sorted(lines),
        "constraints",
        *constraints,
    ]
    if not pinned:
        parts.append(datetime.date.today().isoformat())
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:24]


def _adopt(staging: Path, folder: Path) -> None:
    """Move a finished download into place; one finished by another build first wins."""
    (staging / COMPLETE).touch()
    try:
        staging.rename(folder)
    except OSError:
        if not (folder / COMPLETE).exists():
            raise
        shutil.rmtree(staging, ignore_errors=True)


def pip_wheel(*, deadline: float, report: Callable[[str], None] = lambda line: None) -> Path:
    """pip's own wheel, downloaded once into the cache."""
    folder = cache_root() / "pip"
    found = sorted(folder.glob(f"pip-{PIP_VERSION}-*.whl")) if folder.is_dir() else []
    if found:
        return found[0]
    cache_root().mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=cache_root(), prefix=".pip-"))
    try:
        _pip_download(
            ["--no-deps", f"pip=={PIP_VERSION}"],
            destination=staging / "wheels",
            deadline=deadline,
            max_bytes=64 * 1024 * 1024,
            report=report,
        )
        folder.mkdir(parents=True, exist_ok=True)
        for wheel in (staging / "wheels").glob("pip-*.whl"):
            os.replace(wheel, folder / wheel.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    found = sorted(folder.glob(f"pip-{PIP_VERSION}-*.whl"))
    if not found:
        raise RequirementsRejected(f"pip {PIP_VERSION} could not be downloaded")
    return found[0]


def wheels_download(
    *,
    requirements: list[Requirement],
    policy: RequirementsPolicy,
    deadline: float,
    base_numpy: Callable[[], str | None],
    report: Callable[[str], None] = lambda line: None,
) -> WheelSet:
    """Download (or find in the cache) the wheels of ``requirements`` and check them.

    ``base_numpy`` says which NumPy the base image has (None: none); it is asked only
    when NumPy is involved. Raises RequirementsRejected or BuildTimedOut.
    """
    lines = [str(requirement) for requirement in requirements]
    constraints: list[str] = []
    numpy_requirements = [r for r in requirements if canonicalize_name(r.name) == "numpy"]
    if numpy_requirements:
        version = base_numpy()
        if version and all(
            r.specifier.contains(version, prereleases=True) for r in numpy_requirements
        ):
            lines = [str(r) for r in requirements if canonicalize_name(r.name) != "numpy"]
            constraints = [f"numpy=={version}"]
            report(f"numpy: the base image's NumPy {version} satisfies requirements.txt")
        else:
            report(f"numpy: the base image's NumPy ({version}) does not fit: installing another")
    if not lines:
        return WheelSet(cache_root(), (), None, 0, reused=True)
    installer = pip_wheel(deadline=deadline, report=report)
    root = cache_root() / "sets"
    root.mkdir(parents=True, exist_ok=True)
    folder = root / _set_key(lines, constraints)
    reused = (folder / COMPLETE).exists()
    if reused:
        report(f"wheels: reusing the download in {folder}")
        (folder / COMPLETE).touch()  # marks it used, for the clean-up
    else:
        staging = Path(tempfile.mkdtemp(dir=root, prefix=f".{folder.name}-"))
        try:
            (staging / "requirements.txt").write_text("\n".join(lines) + "\n")
            (staging / "constraints.txt").write_text("".join(f"{c}\n" for c in constraints))
            _pip_download(
                ["-r", str(staging / "requirements.txt"), "-c", str(staging / "constraints.txt")],
                destination=staging / "wheels",
                deadline=deadline,
                max_bytes=policy.max_bytes,
                report=report,
            )
            # pip may finish between two looks at the folder: a set over the cap is not kept.
            if _folder_bytes(staging / "wheels") > policy.max_bytes:
                raise _too_large(policy.max_bytes)
            _adopt(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return _checked(
        folder / "wheels", policy=policy, base_numpy=base_numpy, installer=installer, reused=reused
    )


def _checked(
    folder: Path,
    *,
    policy: RequirementsPolicy,
    base_numpy: Callable[[], str | None],
    installer: Path | None,
    reused: bool,
) -> WheelSet:
    """The downloaded wheels, checked against the policy; those already in the base left out."""
    files = sorted(path for path in folder.iterdir()) if folder.is_dir() else []
    total = sum(path.stat().st_size for path in files)
    if total > policy.max_bytes:
        raise _too_large(policy.max_bytes)
    wheels = []
    for path in files:
        try:
            name, version, _, _ = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            raise RequirementsRejected(
                f"requirements.txt: {path.name} is not a binary wheel; only packages "
                f"published as wheels can be installed. {ADVICE}"
            ) from None
        refusal = policy.refusal(name)
        if refusal:
            raise RequirementsRejected(
                f"requirements.txt: {refusal} (it is needed by your requirements: "
                f"{path.name}); remove what needs it"
            )
        if name == "numpy" and _same_version(version, base_numpy()):
            continue  # the base image has this very NumPy already
        wheels.append(path.name)
    return WheelSet(folder, tuple(wheels), installer, total, reused=reused)


def _same_version(version: Version, other: str | None) -> bool:
    try:
        return other is not None and version == Version(other)
    except InvalidVersion:
        return False


def wheel_cache_prune(*, keep: datetime.timedelta = CACHE_KEEP) -> list[Path]:
    """Remove sets of wheels and pip's cached downloads unused for ``keep``; returns the sets."""
    root = cache_root()
    cutoff = time.time() - keep.total_seconds()
    removed = []
    sets = root / "sets"
    if sets.is_dir():
        for folder in sets.iterdir():
            marker = folder / COMPLETE
            used = marker.stat().st_mtime if marker.exists() else folder.stat().st_mtime
            if used < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    http = root / "http"
    if http.is_dir():
        for directory, _, files in os.walk(http):
            for name in files:
                path = Path(directory, name)
                if path.stat().st_mtime < cutoff:
                    path.unlink(missing_ok=True)
    return removed
