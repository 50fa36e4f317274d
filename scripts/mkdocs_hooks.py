"""MkDocs hooks (mkdocs.yml): the files of the repository outside docs/ that the pages
link to are published with them, under ``repository/``.

On a forge a page links such a file by its relative path (``../../BENCHMARKS.md`` from
``docs/developers/``), which works there as it is. MkDocs only knows the files under
docs/, so this adds each of them to the site as ``repository/<path>`` and points those
links there; the strict build still checks every other link.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
#: Repository files the docs link to, published under repository/.
PUBLISHED = ("BENCHMARKS.md", "nginx/README.md", "terraform/README.md")
PREFIX = "repository"
LINK = re.compile(r"\]\(([^)\s#]+)(#[^)\s]*)?\)")


def on_files(files: Files, config: Any) -> Files:
    for path in PUBLISHED:
        files.append(File.generated(config, f"{PREFIX}/{path}", abs_src_path=str(ROOT / path)))
    return files


def on_page_markdown(markdown: str, page: Page, config: Any, files: Files) -> str:
    source = page.file.src_uri
    if source.startswith(PREFIX + "/"):
        return _relink_published(markdown, source)
    folder = posixpath.dirname(source)

    def relink(match: re.Match[str]) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        if "://" in target or target.startswith("/"):
            return match.group(0)
        in_repository = posixpath.normpath(posixpath.join("docs", folder, target))
        if in_repository not in PUBLISHED:
            return match.group(0)
        published = posixpath.join(PREFIX, in_repository)
        return f"]({posixpath.relpath(published, folder or '.')}{anchor})"

    return LINK.sub(relink, markdown)


def _relink_published(markdown: str, source: str) -> str:
    """A published repository file's links to pages under docs/ (``docs/sandboxes.md``
    from BENCHMARKS.md), pointed at those pages on the site."""
    folder = posixpath.dirname(source)
    in_repository = posixpath.dirname(source[len(PREFIX) + 1 :])

    def relink(match: re.Match[str]) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        if "://" in target or target.startswith("/"):
            return match.group(0)
        path = posixpath.normpath(posixpath.join(in_repository, target))
        if not path.startswith("docs/"):
            return match.group(0)
        return f"]({posixpath.relpath(path[len('docs/') :], folder)}{anchor})"

    return LINK.sub(relink, markdown)
