"""The production proxy (``nginx/``, ``edge/nginx.py``): the configuration rendered from the
site's settings passes ``nginx -t``, with and without a certificate, and a real nginx on
loopback routes, limits, streams, compresses and protects the way the site needs: in
front of stub upstreams, and in front of the real site for what Django decides itself
(its CSRF check over HTTPS, the API's rates per client address)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from api.limits import MULTIPART_ALLOWANCE
from api.online_docs import EVENTS_PATH, REPLY_PATH
from api.rates import rates_reset
from api.v1 import api
from edge.asgi import ONLINE_MAX_BYTES
from edge.nginx import NGINX_DIR, Deployment, nginx_config_render, site_limits
from tests.factories import PASSWORD, UserFactory
from tests.support.gateway import gateway_started
from tests.support.nginx import (
    PAGE,
    WEBSOCKET_GUID,
    Proxy,
    nginx_test,
    proxy_folder,
    proxy_started,
    require_nginx,
    self_signed_certificate,
)
from tests.support.redis import free_port
from tests.support.workers import wait_for

pytestmark = pytest.mark.slow

#: Small caps, so that bodies just over them are quick to send.
UPLOAD_MAX_BYTES = 100_000
SITE_MAX_BYTES = 150_000
API_MAX_BYTES = 2_000


@pytest.fixture
def small_caps(settings: Any) -> None:
    settings.ARENA_UPLOAD_MAX_BYTES = UPLOAD_MAX_BYTES
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = SITE_MAX_BYTES
    settings.ARENA_API_MAX_BODY_BYTES = API_MAX_BYTES


@pytest.fixture
def folder() -> Iterator[Path]:
    require_nginx()
    folder = proxy_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def proxy(settings: Any, small_caps: None) -> Iterator[Proxy]:
    require_nginx()
    yield from proxy_started(settings)


@pytest.fixture
def https_proxy(settings: Any, small_caps: None) -> Iterator[Proxy]:
    require_nginx()
    yield from proxy_started(settings, tls=True)


def _caps(config: str) -> dict[str, int]:
    """Each location's ``client_max_body_size`` (the server's as "server")."""
    caps = {}
    server = re.search(r"server \{.*?client_max_body_size (\d+);", config, re.S)
    assert server is not None
    caps["server"] = int(server.group(1))
    for found in re.finditer(r"location ([^{\n]+?) \{\n\s+client_max_body_size (\d+);", config):
        caps[found.group(1)] = int(found.group(2))
    return caps


# --- the configuration ----------------------------------------------------------------------


def test_the_caps_and_timeouts_follow_the_site_settings(settings):
    settings.ARENA_UPLOAD_MAX_BYTES = 3_000_000
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4_000_000
    settings.ARENA_API_MAX_BODY_BYTES = 5_000
    settings.ARENA_REQUEST_HEADER_SECONDS = 4.0
    settings.ARENA_REQUEST_BODY_SECONDS = 7.0
    settings.ARENA_CONNECTIONS_PER_ADDRESS = 33
    settings.ARENA_ONLINE_POLL_SECONDS = 100.0

    config = nginx_config_render(deployment=Deployment())

    assert _caps(config) == {
        "server": 4_000_000,
        "/api/v1/": 5_000,
        "= /api/v1/submissions": 3_000_000 + MULTIPART_ALLOWANCE,
        "^~ /api/v1/online/": ONLINE_MAX_BYTES,
    }
    assert "client_header_timeout 4s;" in config
    assert "client_body_timeout 7s;" in config
    assert "limit_conn arena_per_address 33;" in config
    # The longest silence of the gateway, a long poll's wait, and a margin.
    assert "proxy_read_timeout 130s;" in config


def test_every_online_play_endpoint_and_nothing_else_goes_to_the_gateway():
    limits = site_limits()
    document = api.get_openapi_schema(path_prefix=limits.api_prefix.rstrip("/"))
    online = {
        path
        for path, operations in document["paths"].items()
        if any("online play" in operation.get("tags", []) for operation in operations.values())
    }

    under_the_prefix = {path for path in document["paths"] if path.startswith(limits.online_prefix)}

    assert {EVENTS_PATH, REPLY_PATH, "/api/v1/online/next", "/api/v1/online/status"} <= online
    assert under_the_prefix == online
    config = nginx_config_render(deployment=Deployment())
    gateway_block = re.search(r"location \^~ /api/v1/online/ \{(.*?)\n        \}", config, re.S)
    assert gateway_block is not None
    assert "proxy_pass http://$arena_gateway;" in gateway_block.group(1)
    assert config.count("proxy_pass http://$arena_gateway;") == 1


def test_the_compose_stack_configuration_passes_nginx_t_without_its_upstreams(folder):
    deployment = Deployment(runtime_dir=folder / "run")  # web:8000, gateway:8001, no certificate
    config = folder / "run" / "nginx.conf"
    config.write_text(nginx_config_render(deployment=deployment))

    checked = nginx_test(config, deployment.runtime_dir)

    assert checked.returncode == 0, checked.stderr
    assert "test is successful" in checked.stderr
    assert "listen 8080 default_server;" in config.read_text()
    assert "ssl_certificate" not in config.read_text()


def test_with_a_certificate_the_configuration_serves_https_and_passes_nginx_t(folder):
    self_signed_certificate(folder / "tls")
    deployment = Deployment(runtime_dir=folder / "run", tls_dir=folder / "tls")
    config = folder / "run" / "nginx.conf"
    config.write_text(nginx_config_render(deployment=deployment))

    checked = nginx_test(config, deployment.runtime_dir)

    assert checked.returncode == 0, checked.stderr
    text = config.read_text()
    assert "listen 8443 ssl http2 default_server;" in text
    assert f"ssl_certificate {folder / 'tls' / 'fullchain.pem'};" in text
    assert "return 308 https://$host$request_uri;" in text  # 443 for the visitors: no port


def test_start_sh_renders_the_configuration_and_becomes_nginx(folder):
    process, port = _start_sh(folder)
    try:
        health = _when_listening(process, port, "/_arena/health")
        page = _when_listening(process, port, "/")
    finally:
        process.terminate()  # nginx itself: the script exec'd it
        _, errors = process.communicate(timeout=60)

    assert health.status == 200
    assert page.status == 503  # no site behind it: the maintenance page
    assert (folder / "run" / "nginx.conf").is_file()
    assert b"(HTTP only)" in errors
    assert process.returncode == 0  # it stopped on SIGTERM, as nginx does


def _start_sh(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """``nginx/start.sh`` started on a free port, and the port. A port found free can be
    taken by another test's server before nginx binds it: then again on another."""
    for _ in range(5):
        port, closed = free_port(), free_port()
        process = subprocess.Popen(
            [
                str(NGINX_DIR / "start.sh"),
                *("--web", f"127.0.0.1:{closed}", "--gateway", f"127.0.0.1:{closed}"),
                *("--resolver", "", "--http-port", str(port)),
                *("--tls-dir", str(folder / "tls"), "--acme-dir", str(folder / "acme")),
                *("--maintenance-flag", str(folder / "maintenance" / "on")),
                *("--access-log", str(folder / "run" / "access.log")),
            ],
            env={
                **os.environ,
                "PYTHON": sys.executable,
                "ARENA_NGINX_RUNTIME_DIR": str(folder / "run"),
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if _listening_or_gone(process, port):
            return process, port
        errors = process.communicate()[1]
        if b"Address already in use" not in errors:
            pytest.fail(f"nginx/start.sh ended before listening:\n{errors.decode()}")
    pytest.fail("no free port stayed free for nginx five times running")


def _listening_or_gone(process: subprocess.Popen[bytes], port: int) -> bool:
    """Whether something listens on ``port`` (True) or ``process`` ended first (False),
    however long its start takes on a loaded machine (ten minutes at the very most: a
    guard against a hang, not a measure of speed)."""
    guard = time.monotonic() + 600
    while process.poll() is None:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return True
        if time.monotonic() > guard:
            pytest.fail(f"nginx/start.sh neither listens on {port} nor ends")
        time.sleep(0.1)
    return False


def _when_listening(
    process: subprocess.Popen[bytes], port: int, path: str
) -> http.client.HTTPResponse:
    """GET ``path`` on ``port``, where ``process`` listens (the answer, read)."""
    assert _listening_or_gone(process, port), "nginx ended"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response
    finally:
        connection.close()


# --- routing ------------------------------------------------------------------------------


def test_it_sends_pages_and_the_api_to_the_site_and_online_play_to_the_gateway(proxy):
    routes = {
        ("GET", "/"): "web",
        ("GET", "/admin/login/"): "web",
        ("GET", "/environments/connect_four/"): "web",
        ("GET", "/api/v1/environments"): "web",
        ("POST", "/api/v1/submissions"): "web",
        ("GET", "/api/v1/online/status"): "gateway",
        ("GET", "/api/v1/online/next?wait=5"): "gateway",
        ("POST", "/api/v1/online/reply"): "gateway",
        ("POST", "/api/v1/online/models"): "gateway",
    }

    served = {
        (method, path): proxy.request(method, path, body=b"{}" if method == "POST" else None)
        for method, path in routes
    }

    assert {route: answer.headers["X-Served-By"] for route, answer in served.items()} == routes
    assert proxy.gateway.paths() == [path for (_, path), to in routes.items() if to == "gateway"]


def test_it_tells_the_upstreams_the_client_address_and_scheme_overwriting_the_client(proxy):
    lies = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}

    site = proxy.request("GET", "/forwarded", headers=lies, source="127.0.0.2").json()
    gateway = proxy.request(
        "GET", "/api/v1/online/forwarded", headers=lies, source="127.0.0.3"
    ).json()

    port = proxy.deployment.http_port
    assert site == {
        "Host": f"127.0.0.1:{port}",  # with its port: Django compares it with Origin
        "X-Forwarded-For": "127.0.0.2",
        "X-Forwarded-Proto": "http",
    }
    assert gateway["X-Forwarded-For"] == "127.0.0.3"
    assert gateway["X-Forwarded-Proto"] == "http"


# --- request bodies -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "cap", "upstream"),
    [
        ("/environments/connect_four/", SITE_MAX_BYTES, "web"),
        ("/api/v1/environments", API_MAX_BYTES, "web"),
        ("/api/v1/submissions", UPLOAD_MAX_BYTES + MULTIPART_ALLOWANCE, "web"),
        ("/api/v1/online/reply", ONLINE_MAX_BYTES, "gateway"),
    ],
    ids=["page", "api", "api-upload", "online"],
)
def test_a_body_over_the_cap_gets_413_and_never_reaches_the_upstream(proxy, path, cap, upstream):
    target = proxy.web if upstream == "web" else proxy.gateway

    at_the_cap = proxy.request("POST", path, body=b"x" * cap)
    over_it = proxy.request("POST", path, body=b"x" * (cap + 1))

    assert at_the_cap.status == 200
    assert at_the_cap.json() == {"received": cap}
    assert over_it.status == 413
    assert [len(request.body) for request in target.received] == [cap]
    if path.startswith("/api/"):
        assert over_it.headers.get_content_type() == "application/json"
        assert over_it.json()["error"]["code"] == "too_large"
        assert f"{cap} bytes at most" in over_it.json()["error"]["message"]
    else:
        assert over_it.headers.get_content_type() == "text/html"
        assert b"An upload may be at most" in over_it.body


# --- compression, headers ---------------------------------------------------------------------


def test_it_compresses_text_for_clients_that_accept_it(proxy):
    (proxy.static_root / "site.css").write_text("body { color: #123; }\n" * 100)

    page = proxy.request("GET", "/", headers={"Accept-Encoding": "gzip"})
    plain = proxy.request("GET", "/")
    listing = proxy.request("GET", "/api/v1/environments", headers={"Accept-Encoding": "gzip"})
    css = proxy.request("GET", "/static/site.css", headers={"Accept-Encoding": "gzip"})

    assert page.headers["Content-Encoding"] == "gzip"
    assert page.headers["Vary"] == "Accept-Encoding"
    assert gzip.decompress(page.body) == PAGE
    assert len(page.body) < len(PAGE) / 5
    assert plain.headers["Content-Encoding"] is None
    assert plain.body == PAGE
    assert listing.headers["Content-Encoding"] == "gzip"
    assert css.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(css.body) == (proxy.static_root / "site.css").read_bytes()


SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


def test_every_answer_carries_the_security_headers_once_and_the_site_s_choice_stands(proxy):
    (proxy.static_root / "site.css").write_text("body {}\n")

    answers = {
        "page": proxy.request("GET", "/"),
        "api": proxy.request("GET", "/api/v1/environments"),
        "static file": proxy.request("GET", "/static/site.css"),
        "missing static file": proxy.request("GET", "/static/nothing.css"),
        "upload": proxy.request("GET", "/media/revisions/anything.py"),
    }
    framed = proxy.request("GET", "/framed")  # the site says SAMEORIGIN for this one

    for what, answer in answers.items():
        for name, value in SECURITY_HEADERS.items():
            assert answer.headers.get_all(name) == [value], (what, name)
        assert "camera=()" in answer.headers["Permissions-Policy"], what
        assert answer.headers["Strict-Transport-Security"] is None, what  # HTTP only
        assert answer.headers["Server"] == "nginx", what  # no version
    assert framed.headers.get_all("X-Frame-Options") == ["SAMEORIGIN"]
    assert framed.headers.get_all("X-Content-Type-Options") == ["nosniff"]


# --- the gateway: streams and WebSockets -----------------------------------------------------


@pytest.mark.parametrize("accept", ["application/x-ndjson", "text/event-stream"])
def test_the_gateway_s_stream_arrives_event_by_event(proxy, accept):
    connection = proxy.connection(timeout=5)  # under the stub's 10 s hold of the second event
    connection.request(
        "GET",
        EVENTS_PATH,
        headers={"Accept": accept, "Accept-Encoding": "gzip", "Authorization": "Bearer x"},
    )
    response = connection.getresponse()

    first = response.readline()  # while the gateway still holds the second event back
    if accept == "text/event-stream":
        first += response.readline() + response.readline()
    proxy.gateway.release.set()
    rest = response.read()
    connection.close()

    assert response.status == 200
    assert response.headers["Content-Encoding"] is None
    assert response.headers.get_content_type() == accept
    assert b'"seq": "1"' in first
    assert b'"seq": "2"' not in first
    assert b'"seq": "2"' in rest


def test_a_websocket_upgrade_is_passed_through_to_the_gateway(proxy):
    key = base64.b64encode(os.urandom(16)).decode()
    expected = base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest())
    frame = (
        bytes([0x81, 0x85])
        + b"\x01\x02\x03\x04"
        + bytes(byte ^ b"\x01\x02\x03\x04"[index % 4] for index, byte in enumerate(b"hello"))
    )

    with socket.create_connection(("127.0.0.1", proxy.deployment.http_port), 5) as sock:
        sock.sendall(
            (
                "GET /api/v1/online/socket HTTP/1.1\r\n"
                f"Host: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(1)
        sock.sendall(frame)
        echoed = b""
        while len(echoed) < len(frame):
            echoed += sock.recv(len(frame) - len(echoed))

    status, *lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines if line)
    assert status.startswith("HTTP/1.1 101")
    assert headers["Sec-WebSocket-Accept"] == expected.decode()
    assert headers["X-Served-By"] == "gateway"
    assert echoed == frame  # the connection is a tunnel now
    [upgrade] = proxy.gateway.received
    assert upgrade.headers["Upgrade"] == "websocket"
    assert upgrade.headers["Connection"].lower() == "upgrade"


# --- maintenance --------------------------------------------------------------------------


def _is_the_maintenance_page(answer) -> bool:
    return (
        answer.status == 503
        and answer.headers.get_content_type() == "text/html"
        and b"Arena is down for maintenance" in answer.body
        and answer.headers["Retry-After"] == "60"
        and answer.headers["X-Frame-Options"] == "DENY"
    )


def _is_the_api_s_unavailable(answer) -> bool:
    return (
        answer.status == 503
        and answer.headers["Retry-After"] == "60"
        and answer.json()["error"]["code"] == "unavailable"
    )


def test_the_maintenance_page_answers_while_the_upstreams_are_down(proxy):
    proxy.web.stop()
    proxy.gateway.stop()

    assert _is_the_maintenance_page(proxy.request("GET", "/"))
    assert _is_the_maintenance_page(proxy.request("POST", "/accounts/login/", body=b"a=b"))
    assert _is_the_api_s_unavailable(proxy.request("GET", "/api/v1/environments"))
    assert _is_the_api_s_unavailable(proxy.request("GET", EVENTS_PATH))
    assert _is_the_api_s_unavailable(proxy.request("POST", REPLY_PATH, body=b"{}"))
    assert proxy.request("GET", "/_arena/health").status == 200


def test_the_maintenance_flag_switches_the_site_off_and_on_again(proxy):
    (proxy.static_root / "site.css").write_text("body {}\n")
    flag = proxy.deployment.maintenance_flag

    flag.touch()
    during = {
        "page": proxy.request("GET", "/"),
        "api": proxy.request("GET", "/api/v1/environments"),
        "online": proxy.request("GET", "/api/v1/online/status"),
        "static": proxy.request("GET", "/static/site.css"),
    }
    flag.unlink()
    after = proxy.request("GET", "/")

    assert _is_the_maintenance_page(during["page"])
    assert _is_the_api_s_unavailable(during["api"])
    assert _is_the_api_s_unavailable(during["online"])
    assert during["static"].status == 200
    assert after.status == 200
    assert proxy.web.paths() == ["/"]  # only the request after maintenance reached it
    assert proxy.gateway.received == []


# --- files ----------------------------------------------------------------------------------


def test_static_files_come_from_the_disk_with_cache_headers(proxy):
    (proxy.static_root / "web").mkdir()
    (proxy.static_root / "web" / "site.css").write_text("body {}\n")
    (proxy.static_root / "web" / "site.0123456789ab.css").write_text("body {}\n")

    plain = proxy.request("GET", "/static/web/site.css")
    hashed = proxy.request("GET", "/static/web/site.0123456789ab.css")
    missing = proxy.request("GET", "/static/web/missing.css")

    assert plain.status == 200
    assert plain.body == b"body {}\n"
    assert plain.headers.get_content_type() == "text/css"
    assert plain.headers["Cache-Control"] == "public, max-age=3600"
    assert plain.headers["ETag"] and plain.headers["Last-Modified"]
    assert hashed.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert missing.status == 404
    assert missing.headers["Cache-Control"] is None
    assert proxy.web.received == []  # never the site's business


def test_uploaded_source_code_is_never_served(proxy):
    upload = proxy.media_root / "revisions" / "connect_four" / "alice" / "v1" / "agent.py"
    upload.parent.mkdir(parents=True)
    upload.write_text("SECRET_STRATEGY = 42\n")
    tries = [
        "/media/revisions/connect_four/alice/v1/agent.py",
        "/static/../media/revisions/connect_four/alice/v1/agent.py",
        "/static/..%2fmedia/revisions/connect_four/alice/v1/agent.py",
        "/static/%2e%2e/media/revisions/connect_four/alice/v1/agent.py",
        "/revisions/connect_four/alice/v1/agent.py",
    ]

    answers = [proxy.request("GET", path) for path in tries]

    for path, answer in zip(tries, answers, strict=True):
        assert b"SECRET_STRATEGY" not in answer.body, path
    assert [answer.status for answer in answers[:4]] == [404, 404, 404, 404]


# --- logs and limits --------------------------------------------------------------------------


def test_the_access_log_keeps_no_query_string_token_or_cookie(proxy):
    proxy.request(
        "GET",
        "/environments/?invite=SECRET-IN-QUERY",
        headers={
            "Authorization": "Bearer SECRET-IN-HEADER",
            "Cookie": "sessionid=SECRET-IN-COOKIE",
            "Referer": "http://127.0.0.1/accounts/register/?invite=SECRET-IN-REFERER",
        },
    )
    reset = reverse("password_reset_confirm", kwargs={"uidb64": "MQ", "token": "SECRET-RESET"})
    proxy.request("GET", reset)
    # nginx writes a request's line once its answer is sent: it may come a moment after.
    wait_for(
        lambda: "/accounts/password/reset/MQ/" in proxy.access_log.read_text(),
        timeout=30,
        what="the second request in the access log",
    )

    log = proxy.access_log.read_text()

    assert '"GET /environments/ HTTP/1.1" 200' in log
    assert '"http://127.0.0.1/accounts/register/"' in log
    assert '"GET /accounts/password/reset/MQ/* HTTP/1.1"' in log
    assert "SECRET" not in log


def test_sign_in_posts_are_limited_per_address(proxy):
    login = reverse("login")

    statuses = [proxy.request("POST", login, body=b"a=b").status for _ in range(13)]
    page = proxy.request("GET", login)
    elsewhere = proxy.request("POST", login, body=b"a=b", source="127.0.0.2")
    other_form = proxy.request("POST", "/environments/connect_four/", body=b"a=b")

    assert statuses[:11] == [200] * 11  # the burst
    assert statuses[11:] == [429, 429]
    assert page.status == 200
    assert elsewhere.status == 200
    assert other_form.status == 200
    assert proxy.web.paths().count(login) == 11 + 2


# --- HTTPS --------------------------------------------------------------------------------


def test_with_a_certificate_http_moves_to_https_but_acme_challenges_stay(https_proxy):
    challenge = https_proxy.deployment.acme_dir / ".well-known" / "acme-challenge" / "token-1"
    challenge.parent.mkdir(parents=True)
    challenge.write_text("token-1.thumbprint")

    moved = https_proxy.request("POST", "/environments/?page=2", body=b"a=b")
    acme = https_proxy.request("GET", "/.well-known/acme-challenge/token-1")
    health = https_proxy.request("GET", "/_arena/health")

    port = https_proxy.deployment.https_port
    assert moved.status == 308  # the method and body are kept
    assert moved.headers["Location"] == f"https://127.0.0.1:{port}/environments/?page=2"
    assert acme.status == 200
    assert acme.body == b"token-1.thumbprint"
    assert health.status == 200
    assert https_proxy.web.received == []


def test_over_https_the_site_learns_the_scheme_and_browsers_get_hsts(https_proxy):
    seen = https_proxy.request("GET", "/forwarded", https=True)
    page = https_proxy.request("GET", "/", https=True)

    assert seen.json()["X-Forwarded-Proto"] == "https"
    assert seen.json()["Host"] == f"127.0.0.1:{https_proxy.deployment.https_port}"
    assert page.status == 200
    assert page.headers["Strict-Transport-Security"] == "max-age=31536000"
    for name, value in SECURITY_HEADERS.items():
        assert page.headers.get_all(name) == [value]


def test_after_a_renewal_a_reload_serves_the_new_certificate(https_proxy):
    tls = https_proxy.deployment.tls_dir
    first = https_proxy.served_certificate()

    self_signed_certificate(tls)  # renewed: a new key and certificate, same files
    renewed = ssl.PEM_cert_to_DER_cert((tls / "fullchain.pem").read_text())
    https_proxy.reload()
    deadline = time.monotonic() + 10
    while https_proxy.served_certificate() != renewed and time.monotonic() < deadline:
        time.sleep(0.1)  # the new workers take over

    assert first != renewed
    assert https_proxy.served_certificate() == renewed


# --- in front of the real site ------------------------------------------------------------------


@pytest.fixture
def site_proxy(live_server: Any, settings: Any) -> Iterator[Proxy]:
    """nginx with HTTPS in front of the real site (Django's live server)."""
    require_nginx()
    port = urllib.parse.urlsplit(live_server.url).port
    yield from proxy_started(settings, tls=True, site_address=f"127.0.0.1:{port}")


def _sign_in_over_https(proxy: Proxy, email: str) -> int:
    """Load the sign-in page and post it, as a browser would over HTTPS: the status."""
    login = reverse("login")
    form = proxy.request("GET", login, https=True)
    cookie = form.headers["Set-Cookie"].split(";", 1)[0]
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', form.body)
    assert token is not None
    origin = f"https://127.0.0.1:{proxy.deployment.https_port}"
    answer = proxy.request(
        "POST",
        login,
        https=True,
        body=urllib.parse.urlencode(
            {"csrfmiddlewaretoken": token.group(1), "username": email, "password": PASSWORD}
        ).encode(),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": cookie,
            "Origin": origin,
            "Referer": origin + login,
        },
    )
    return answer.status


@pytest.mark.django_db(transaction=True)
def test_behind_the_proxy_a_form_posted_over_https_passes_django_s_csrf_check(site_proxy, settings):
    # What ARENA_BEHIND_PROXY=1 sets (tests/core/test_settings.py).
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    user = UserFactory()

    assert _sign_in_over_https(site_proxy, user.email) == 302


@pytest.mark.django_db(transaction=True)
def test_without_arena_behind_proxy_django_refuses_forms_posted_over_https(site_proxy, settings):
    settings.SECURE_PROXY_SSL_HEADER = None
    user = UserFactory()

    # The page's origin is https://, the request Django sees is http://: a forgery to it.
    assert _sign_in_over_https(site_proxy, user.email) == 403


@pytest.mark.django_db(transaction=True)
def test_behind_the_proxy_the_api_counts_each_client_by_its_own_address(site_proxy, settings):
    settings.ARENA_BEHIND_PROXY = True
    settings.ARENA_API_ANONYMOUS_RATE = "2/min"
    rates_reset()

    def listing(source: str, forged: str) -> int:
        return site_proxy.request(
            "GET",
            "/api/v1/environments",
            https=True,
            source=source,
            headers={"X-Forwarded-For": forged},
        ).status

    first = [listing("127.0.0.2", f"198.51.100.{n}") for n in range(3)]
    second = listing("127.0.0.3", "198.51.100.1")

    assert first == [200, 200, 429]  # a forged X-Forwarded-For buys nothing
    assert second == 200  # another client has its own count


@pytest.fixture
def gateway_proxy(celery_workers: Any, redis_url: str, settings: Any) -> Iterator[Proxy]:
    """nginx in front of the real gateway (uvicorn), which is told it is behind a proxy."""
    require_nginx()
    gateway = gateway_started(
        celery_workers,
        redis_url,
        settings,
        ARENA_BEHIND_PROXY="1",
        # Look-ups of unknown tokens, counted per address.
        ARENA_API_ANONYMOUS_RATE="2/min",
        # uvicorn would trust a proxy on loopback by itself: here only the setting may.
        FORWARDED_ALLOW_IPS="192.0.2.1",
    )
    yield from proxy_started(settings, gateway_address=f"{gateway.host}:{gateway.port}")


@pytest.mark.django_db(transaction=True)
def test_behind_the_proxy_the_gateway_counts_each_client_by_its_own_address(gateway_proxy):
    def status(source: str, token: str) -> int:
        return gateway_proxy.request(
            "GET",
            "/api/v1/online/status",
            source=source,
            headers={"Authorization": f"Bearer {token}", "X-Forwarded-For": "192.0.2.7"},
        ).status

    first = [status("127.0.0.2", f"made-up-{n}") for n in range(3)]
    second = status("127.0.0.3", "made-up-3")

    assert first == [401, 401, 429]  # a forged X-Forwarded-For buys nothing
    assert second == 401  # its own count, not the proxy's address's
