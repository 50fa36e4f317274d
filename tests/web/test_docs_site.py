"""The documentation site served by Arena itself at /docs/, linked from every page's
header: mkdocs's pages by their folder URLs, nothing outside the site, and a page that
says how to build it when it is not built."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(settings, tmp_path):
    root = tmp_path / "docs-site"
    (root / "players" / "your-competitors").mkdir(parents=True)
    (root / "index.html").write_text("<h1>Arena's documentation</h1>")
    (root / "players" / "your-competitors" / "index.html").write_text("<h1>Your competitors</h1>")
    (root / "assets").mkdir()
    (root / "assets" / "site.css").write_text("body {}")
    (tmp_path / "secret.txt").write_text("not for the public")
    settings.ARENA_DOCS_ROOT = root
    return root


def test_every_page_links_the_documentation(client):
    page = client.get("/").content.decode()
    assert '<a href="/docs/">Docs</a>' in page


def test_it_serves_the_built_site_by_its_folder_urls(client, site):
    home = client.get("/docs/")
    assert home.status_code == 200
    assert b"".join(home.streaming_content) == b"<h1>Arena's documentation</h1>"
    page = client.get("/docs/players/your-competitors/")
    assert b"".join(page.streaming_content) == b"<h1>Your competitors</h1>"
    style = client.get("/docs/assets/site.css")
    assert style["Content-Type"] == "text/css"


@pytest.mark.parametrize(
    "path", ["/docs/../secret.txt", "/docs/%2e%2e/secret.txt", "/docs/nothing/", "/docs/assets/x"]
)
def test_it_serves_nothing_outside_the_site(client, site, path):
    response = client.get(path)
    assert response.status_code == 404
    assert b"not for the public" not in response.content


def test_without_a_built_site_it_says_how_to_build_one(client, settings, tmp_path):
    settings.ARENA_DOCS_ROOT = tmp_path / "none"
    response = client.get("/docs/")
    assert response.status_code == 404
    assert "make docs-site" in response.content.decode()
