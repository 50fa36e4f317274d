"""The containers' healthchecks (``core.healthcheck``) and ``/healthz``."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from core import healthcheck
from tests.support.imports import imported_after


def serve(status: int, seen: list[str]) -> HTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers["Host"])
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False), (400, False)])
def test_http_asks_with_the_first_allowed_host(monkeypatch, status, healthy):
    monkeypatch.setenv("ARENA_ALLOWED_HOSTS", " arena.example.org , localhost")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # never used for the check
    seen: list[str] = []
    server = serve(status, seen)
    url = f"http://127.0.0.1:{server.server_address[1]}/healthz"
    try:
        assert (healthcheck.main(["http", url]) == 0) is healthy
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["arena.example.org"]


@pytest.mark.parametrize("allowed", ["*", ".example.org"])
def test_http_names_no_host_for_a_wildcard(monkeypatch, allowed):
    monkeypatch.setenv("ARENA_ALLOWED_HOSTS", allowed)
    seen: list[str] = []
    server = serve(200, seen)
    port = server.server_address[1]
    try:
        assert healthcheck.main(["http", f"http://127.0.0.1:{port}/healthz"]) == 0
    finally:
        server.shutdown()
        server.server_close()
    assert seen == [f"127.0.0.1:{port}"]


def test_http_is_unhealthy_when_nothing_answers(capsys):
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    url = f"http://127.0.0.1:{port}/healthz"
    assert healthcheck.main(["http", url]) == 1
    assert capsys.readouterr().err.startswith(f"unhealthy: {url}")


def test_a_check_starts_with_the_standard_library_alone():
    """A check runs every few seconds in every container: importing ``core`` must not
    start Celery or Django (0.3 s of CPU a check), and only the HTTP check needs urllib's
    client."""
    heavy = ("celery", "django", "kombu", "urllib.request")
    assert imported_after("import core.healthcheck", heavy) == []
    assert (
        imported_after(
            "from core import healthcheck\nhealthcheck.check_tcp('127.0.0.1', '1')", heavy
        )
        == []
    )


def test_a_heartbeat_file_is_healthy_while_fresh(tmp_path, capsys):
    beat = tmp_path / "heartbeat"
    assert healthcheck.main(["file", str(beat), "60"]) == 1
    beat.touch()
    assert healthcheck.main(["file", str(beat), "60"]) == 0
    old = time.time() - 120
    os.utime(beat, (old, old))
    assert healthcheck.main(["file", str(beat), "60"]) == 1
    assert "last touched 120 s ago" in capsys.readouterr().err


def test_sockets_are_healthy_while_they_accept():
    listener = socket.create_server(("127.0.0.1", 0))
    port = str(listener.getsockname()[1])
    assert healthcheck.main(["tcp", "127.0.0.1", port]) == 0
    listener.close()
    assert healthcheck.main(["tcp", "127.0.0.1", port]) == 1
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "engine.sock")
        unix = socket.socket(socket.AF_UNIX)
        unix.bind(path)
        unix.listen()
        assert healthcheck.main(["unix", path]) == 0
        unix.close()
        assert healthcheck.main(["unix", path]) == 1


def test_a_wrong_command_line_prints_the_usage(capsys):
    assert healthcheck.main(["http"]) == 2
    assert "python -m core.healthcheck" in capsys.readouterr().err


@pytest.mark.django_db
def test_healthz_answers_when_the_database_does(client):
    answer = client.get("/healthz")
    assert answer.status_code == 200 and answer.json() == {"status": "ok"}
    assert "no-cache" in answer["Cache-Control"]
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_healthz_says_unavailable_when_the_database_does_not_answer(client, monkeypatch):
    from django.db import OperationalError, connection

    def refused() -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", refused)
    answer = client.get("/healthz")
    assert answer.status_code == 503
    assert answer.json() == {"status": "unavailable", "database": "unreachable"}
