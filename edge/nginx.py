"""The reverse proxy of a production deployment: nginx's configuration, rendered from this
site's settings and routes (``manage.py nginx_config``) so that its limits never drift from
the site's: the request body caps, the header and body deadlines, the connections one
address may hold, the gateway's longest wait, where the static files are, which paths the
network gateway serves.

The templates are ``nginx/templates/`` (Django templates whose output is nginx's syntax);
``nginx/start.sh`` renders them and starts nginx in the compose stack. What is about the
deployment rather than the site (addresses of the upstreams, ports, where certificates and
the maintenance flag are) is a ``Deployment``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from django.conf import settings
from django.template import Context, Engine
from django.urls import reverse

from api.limits import MULTIPART_ALLOWANCE
from sandboxes.seat_gateway import PING_SECONDS

NGINX_DIR = Path(settings.BASE_DIR) / "nginx"
#: Posts of the sign-in, sign-up and password reset forms one address may make a minute
#: (after a burst of ``SIGN_IN_BURST``): slows password guessing.
SIGN_IN_PER_MINUTE = 20
SIGN_IN_BURST = 10
#: Added to the gateway's longest silence (a long poll's wait, or between two pings of a
#: stream) before nginx gives up on a gateway that says nothing.
GATEWAY_READ_MARGIN_SECONDS = 30
#: How long browsers may keep a static file whose name does not change with its content.
STATIC_MAX_AGE_SECONDS = 3600
#: Headers on every answer, each unless the site's answer has one (the variables are maps
#: of nginx.conf on the upstream's header); HSTS on HTTPS alone.
SECURITY_HEADERS = [
    ("X-Content-Type-Options", "$arena_content_type_options"),
    ("X-Frame-Options", "$arena_frame_options"),
    ("Referrer-Policy", "$arena_referrer_policy"),
    ("Permissions-Policy", "$arena_permissions_policy"),
]
HSTS_HEADER = ("Strict-Transport-Security", "$arena_hsts")


@dataclasses.dataclass(frozen=True)
class Deployment:
    """Where this deployment's pieces are; the defaults are the compose stack's."""

    #: ``host:port`` of gunicorn (the site) and of the network gateway (uvicorn).
    web: str = "web:8000"
    gateway: str = "gateway:8001"
    #: The DNS server that resolves the upstreams' names at request time (Docker's own on
    #: a compose network), so that nginx starts, and shows the maintenance page, while
    #: they are down, and follows them when they come back on a new address. Empty: none
    #: (then the upstreams must be IP addresses).
    resolver: str = "127.0.0.11"
    #: Ports inside the container (a non-root nginx cannot bind 80 and 443), and the port
    #: HTTPS has for the visitors (what compose publishes), for the redirect from HTTP.
    http_port: int = 8080
    https_port: int = 8443
    public_https_port: int = 443
    #: HTTPS is served when both ``fullchain.pem`` and ``privkey.pem`` are here.
    tls_dir: Path = Path("/etc/arena/tls")
    #: While this file exists, every page and API call answers 503 with the maintenance
    #: page (static files still work).
    maintenance_flag: Path = Path("/etc/arena/maintenance/on")
    #: Files of ACME HTTP-01 challenges (``certbot certonly --webroot -w <here>``).
    acme_dir: Path = Path("/etc/arena/acme")
    #: nginx's pid file and temporary files (request bodies on their way to the site).
    runtime_dir: Path = Path("/tmp/arena-nginx")
    access_log: str = "/dev/stdout"
    error_log: str = "stderr"

    @property
    def certificate(self) -> Path:
        return self.tls_dir / "fullchain.pem"

    @property
    def certificate_key(self) -> Path:
        return self.tls_dir / "privkey.pem"

    @property
    def has_tls(self) -> bool:
        return self.certificate.is_file() and self.certificate_key.is_file()


@dataclasses.dataclass(frozen=True)
class BodyCap:
    """A location whose request bodies may be larger than the API's small limit."""

    location: str  # nginx's match: "= /api/v1/submissions" or "~ ^/api/v1/x/[^/]+$"
    max_bytes: int


@dataclasses.dataclass(frozen=True)
class SiteLimits:
    """What the proxy takes from the site."""

    #: Any request to the site's pages: an upload with its form.
    site_max_bytes: int
    api_prefix: str
    #: The API's bodies, uploads aside.
    api_max_bytes: int
    uploads: list[BodyCap]
    #: Everything under it goes to the network gateway, whose bodies are protocol messages.
    online_prefix: str
    online_max_bytes: int
    header_seconds: int
    body_seconds: int
    #: Requests one client address may have in progress at once (a held stream counts as
    #: one; idle keep-alive connections do not count).
    connections_per_address: int
    #: How long nginx waits for the gateway to say something.
    gateway_read_seconds: int
    static_url: str
    static_root: Path
    #: The forms whose posts are rate-limited per address.
    sign_in_paths: list[str]
    #: The path a password reset link starts with (the one-time token follows).
    password_reset_prefix: str


def _location_of(path: str) -> str:
    """An nginx location for an OpenAPI path: exact, or a regex for ``{parameters}``."""
    if "{" not in path:
        return f"= {path}"
    parts = re.split(r"\{[^}]+\}", path)
    return "~ ^" + "[^/]+".join(re.escape(part) for part in parts) + "$"


def _uploads(api_prefix: str, max_bytes: int) -> list[BodyCap]:
    """The API's operations that take a multipart body, from its OpenAPI document."""
    from api.v1 import api

    document = api.get_openapi_schema(path_prefix=api_prefix.rstrip("/"))
    return [
        BodyCap(_location_of(path), max_bytes)
        for path, operations in sorted(document["paths"].items())
        if any(
            "multipart/form-data" in operation.get("requestBody", {}).get("content", {})
            for operation in operations.values()
        )
    ]


def site_limits() -> SiteLimits:
    """This site's limits and routes, as its settings and URLs say now."""
    from api.online_docs import EVENTS_PATH, REPLY_PATH
    from edge.asgi import ONLINE_MAX_BYTES

    api_prefix = reverse("api-v1:api-root")
    online_prefix = EVENTS_PATH.rsplit("/", 1)[0] + "/"
    if not REPLY_PATH.startswith(online_prefix):
        raise RuntimeError("the gateway's endpoints no longer share a prefix: route each one")
    upload_max_bytes = settings.ARENA_UPLOAD_MAX_BYTES + MULTIPART_ALLOWANCE
    reset = reverse("password_reset_confirm", kwargs={"uidb64": "uid", "token": "token"})
    static_url = "/" + settings.STATIC_URL.strip("/") + "/"
    return SiteLimits(
        site_max_bytes=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        api_prefix=api_prefix,
        api_max_bytes=settings.ARENA_API_MAX_BODY_BYTES,
        uploads=_uploads(api_prefix, upload_max_bytes),
        online_prefix=online_prefix,
        online_max_bytes=ONLINE_MAX_BYTES,
        header_seconds=max(1, round(settings.ARENA_REQUEST_HEADER_SECONDS)),
        body_seconds=max(1, round(settings.ARENA_REQUEST_BODY_SECONDS)),
        connections_per_address=settings.ARENA_CONNECTIONS_PER_ADDRESS,
        gateway_read_seconds=round(
            max(settings.ARENA_ONLINE_POLL_SECONDS, PING_SECONDS) + GATEWAY_READ_MARGIN_SECONDS
        ),
        static_url=static_url,
        static_root=Path(settings.STATIC_ROOT),
        sign_in_paths=[
            reverse("login"),
            reverse("register"),
            reverse("password_reset"),
            reverse("admin:login"),
        ],
        password_reset_prefix=reset[: reset.index("/uid/") + 1],
    )


def _nginx_string(text: str) -> str:
    """``text`` as a single-quoted nginx string (no variables may hide in it)."""
    if "$" in text:
        raise ValueError("nginx would read '$' in a string as a variable")
    flat = " ".join(text.split())  # one line (an HTML page has no preformatted text here)
    return "'" + flat.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.3g} MB"


def nginx_config_render(*, deployment: Deployment) -> str:
    """nginx's whole configuration (``nginx.conf``) for ``deployment``."""
    limits = site_limits()
    engine = Engine(dirs=[str(NGINX_DIR / "templates")], autoescape=False)
    maintenance_page = (NGINX_DIR / "pages" / "maintenance.html").read_text()
    https_suffix = "" if deployment.public_https_port == 443 else f":{deployment.public_https_port}"
    context = {
        "deployment": deployment,
        "tls": deployment.has_tls,
        "limits": limits,
        "https_suffix": https_suffix,
        "sign_in_pattern": "|".join(re.escape(path) for path in limits.sign_in_paths),
        "password_reset_pattern": re.escape(limits.password_reset_prefix),
        "maintenance_page": _nginx_string(maintenance_page),
        "upload_size": _megabytes(settings.ARENA_UPLOAD_MAX_BYTES),
        "api_caps": sorted(
            {limits.api_max_bytes, limits.online_max_bytes}
            | {upload.max_bytes for upload in limits.uploads}
        ),
        "sign_in_per_minute": SIGN_IN_PER_MINUTE,
        "sign_in_burst": SIGN_IN_BURST,
        "static_max_age": STATIC_MAX_AGE_SECONDS,
        "http_headers": SECURITY_HEADERS,
        "https_headers": [*SECURITY_HEADERS, HSTS_HEADER],
    }
    text: str = engine.get_template("nginx.conf").render(Context(context, autoescape=False))
    # The templates' tags leave blank lines behind.
    text = re.sub(r"\n(?:[ \t]*\n)+(?=[ \t]*\})", "\n", text)
    return re.sub(r"\n(?:[ \t]*\n){2,}", "\n\n", text)
