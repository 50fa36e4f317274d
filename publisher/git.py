"""The publisher's git: the ``git`` command line run without a shell, with a time limit and
a clean environment, on a local clone of the publication repository.

Every command and its answer go to a transcript, which becomes the revision's publication
log; credentials in the repository URL never appear in it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shlex
import shutil
import signal
import subprocess
from email.utils import parseaddr
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from core.errors import ArenaError

#: Longest one git command may take (the first fetch of a big repository, a slow remote).
GIT_TIMEOUT_SECONDS = 300
#: The publication log keeps the end of the transcript, this many characters.
LOG_CHARS = 100_000
#: Variables a deployment may need to reach its remote (an ssh agent, a proxy, a CA).
PASSED_THROUGH = (
    "SSH_AUTH_SOCK",
    "GIT_SSH_COMMAND",
    "GIT_SSL_CAINFO",
    "SSL_CERT_FILE",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
)


class PublishError(ArenaError):
    """Publishing failed (the repository is unreachable, refused the push...); worth retrying."""


def _redacted(url: str) -> str:
    """The URL without its credentials (``https://token@host/...``), for logs and errors."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


class Transcript:
    """The git commands run and what they answered: the publication log, credentials hidden."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown_url = _redacted(url)
        self.lines: list[str] = []

    def add(self, text: str) -> None:
        self.lines.append(text.replace(self.url, self.shown_url) if self.url else text)

    def text(self) -> str:
        return "\n".join(self.lines)[-LOG_CHARS:]


@dataclasses.dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: str
    #: stdout and stderr together, as a person would read them.
    output: str

    def reason(self) -> str:
        """The line that says what went wrong: git's first ``fatal:`` or ``error:``."""
        lines = [line.strip() for line in self.output.splitlines() if line.strip()]
        for line in lines:
            for prefix in ("fatal: ", "error: "):
                if line.startswith(prefix):
                    return line.removeprefix(prefix)
        return lines[-1] if lines else f"git exited with status {self.returncode}"


def _git_environment() -> dict[str, str]:
    """A clean environment: nothing of the worker's but what git needs to reach the remote."""
    name, email = parseaddr(settings.ARENA_PUBLISH_AUTHOR)
    environment = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", "/nonexistent"),
        "LC_ALL": "C",
        # A remote asking for a password fails at once rather than waiting for a terminal.
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": name or "Arena",
        "GIT_AUTHOR_EMAIL": email or "arena@localhost",
        "GIT_COMMITTER_NAME": name or "Arena",
        "GIT_COMMITTER_EMAIL": email or "arena@localhost",
    }
    for variable in PASSED_THROUGH:
        if variable in os.environ:
            environment[variable] = os.environ[variable]
    return environment


def _git(*args: str, cwd: Path, transcript: Transcript) -> GitResult:
    """Run ``git args`` in ``cwd`` (no shell), with a time limit; record it in the transcript."""
    command = ["git", "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", *args]
    transcript.add("$ " + shlex.join(["git", *args]))
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=_git_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Its own session: no terminal for ssh to prompt on, and one group to kill.
            start_new_session=True,
        )
    except FileNotFoundError:
        raise PublishError("git is not installed on this worker; install it") from None
    try:
        stdout, stderr = process.communicate(timeout=GIT_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        # ssh or a credential helper started by git would keep the pipes open: kill them all.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        transcript.add(f"(killed after {GIT_TIMEOUT_SECONDS} s)")
        raise PublishError(
            f"git {args[0]} did not finish within {GIT_TIMEOUT_SECONDS} s; "
            f"is {transcript.shown_url} reachable?"
        ) from None
    out = stdout.decode(errors="replace")
    output = (out + stderr.decode(errors="replace")).strip()
    if output:
        transcript.add(output)
    if process.returncode:
        transcript.add(f"(exit status {process.returncode})")
    return GitResult(returncode=process.returncode, stdout=out, output=output)


class Clone:
    """The work folder's clone of the publication repository, on the publication branch."""

    def __init__(self, path: Path, *, url: str, branch: str, transcript: Transcript) -> None:
        self.path = path
        self.url = url
        self.branch = branch
        self.remote_ref = f"refs/remotes/origin/{branch}"
        self.transcript = transcript

    def run(self, *args: str) -> GitResult:
        return _git(*args, cwd=self.path, transcript=self.transcript)

    def must(self, *args: str, failure: str) -> GitResult:
        result = self.run(*args)
        if result.returncode:
            raise PublishError(f"{failure}: {result.reason()}")
        return result

    def open(self) -> None:
        if not (self.path / ".git").is_dir():
            # The first publication here (or a clone someone removed half of): start afresh.
            shutil.rmtree(self.path, ignore_errors=True)
            self.path.mkdir(parents=True)
            self.must(
                "init", "--quiet", f"--initial-branch={self.branch}", failure="git init failed"
            )
        # We hold the work folder's lock, so a lock file left here is a killed git's.
        git_dir = self.path / ".git"
        for stale in (git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "config.lock"):
            stale.unlink(missing_ok=True)
        for stale in (git_dir / "refs").rglob("*.lock"):
            stale.unlink(missing_ok=True)
        self.must(
            "config", "remote.origin.url", self.url, failure="cannot configure the local clone"
        )

    def sync(self) -> bool:
        """Make the working tree the remote branch, exactly; False when the remote has no such
        branch yet (an empty repository), which then starts from nothing."""
        shown = self.transcript.shown_url
        listed = self.run("ls-remote", "--heads", "origin", f"refs/heads/{self.branch}")
        if listed.returncode:
            raise PublishError(
                f"cannot reach the publication repository {shown}: {listed.reason()}; "
                "check ARENA_PUBLISH_REPOSITORY and this worker's access to it"
            )
        exists = bool(listed.stdout.strip())
        if exists:
            self.must(
                "fetch",
                "--quiet",
                "--no-tags",
                "origin",
                f"+refs/heads/{self.branch}:{self.remote_ref}",
                failure=f"cannot fetch the branch {self.branch} of {shown}",
            )
            self.must(
                "checkout",
                "--quiet",
                "--force",
                "-B",
                self.branch,
                self.remote_ref,
                failure=f"cannot check out the branch {self.branch}",
            )
        else:
            self.run("update-ref", "-d", self.remote_ref)
            self.must(
                "symbolic-ref", "HEAD", f"refs/heads/{self.branch}", failure="git symbolic-ref"
            )
            self.run("update-ref", "-d", f"refs/heads/{self.branch}")
            self.must("read-tree", "--empty", failure="cannot empty the index")
        self.must("clean", "--quiet", "-ffdx", failure="cannot clean the working tree")
        return exists

    def commit_with(self, trailer: str) -> str:
        """The commit on the remote branch whose message holds ``trailer``, or ''."""
        found = self.must(
            "log",
            "--fixed-strings",
            f"--grep={trailer}",
            "--format=%H",
            "-n",
            "1",
            self.remote_ref,
            failure="cannot read the history",
        )
        return found.stdout.strip()

    def published_version(self, folder: str) -> int | None:
        """The competitor's version in the remote branch, read from the last commit subject
        (``<environment>/<competitor> v<version>``) that changed its folder."""
        found = self.must(
            "log",
            "-n",
            "1",
            "--format=%s",
            self.remote_ref,
            "--",
            folder,
            failure="cannot read the history",
        )
        match = re.fullmatch(rf"{re.escape(folder)} v(\d+)", found.stdout.strip())
        return int(match.group(1)) if match else None

    def commit(self, folder: str, paragraphs: list[str]) -> str:
        # --force: a .gitignore in the repository or the upload must not drop agent files.
        self.must("add", "--all", "--force", "--", folder, failure="git add failed")
        message = [argument for paragraph in paragraphs for argument in ("-m", paragraph)]
        # --allow-empty: an upload identical to the published one still gets its commit, so
        # every revision has exactly one.
        self.must(
            "commit", "--quiet", "--no-verify", "--allow-empty", *message, failure="commit failed"
        )
        return self.must("rev-parse", "HEAD", failure="git rev-parse").stdout.strip()

    def push(self) -> bool:
        """Push the branch; False when refused because the remote branch moved on."""
        pushed = self.run("push", "--porcelain", "origin", f"HEAD:refs/heads/{self.branch}")
        if pushed.returncode == 0:
            return True
        refused = [line for line in pushed.output.splitlines() if line.startswith("!")]
        if any("[rejected]" in line for line in refused):
            return False  # non-fast-forward or "fetch first": someone pushed before us
        reason = refused[0].split("\t")[-1] if refused else pushed.reason()
        raise PublishError(
            f"the publication repository {self.transcript.shown_url} refused the push: {reason}"
        )
