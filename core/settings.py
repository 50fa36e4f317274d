"""Django settings, driven by the environment.

Defaults give the embedded setup: SQLite in ``var/`` (the database and the embedded
broker), the ``process`` sandbox, debug on. Production sets ``ARENA_DEBUG=0``,
``ARENA_SECRET_KEY``, ``DATABASE_URL``, ``ARENA_BROKER_URL`` and ``ARENA_ALLOWED_HOSTS``.
"""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
#: Where the SQLite database, the embedded broker, uploads, builds, caches, logs and the
#: publisher's clone go by default.
VAR_DIR = Path(os.environ.get("ARENA_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str) -> str:
    """``name`` from the environment; or, when ``<name>_FILE`` is set, the content of that
    file (a secret mounted by docker-compose or a secrets manager), without its final
    newline."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().rstrip("\r\n")
        except OSError as error:
            raise ValueError(f"{name}_FILE: cannot read {path}: {error.strerror}") from None
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {value!r}") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, object]:
    """``sqlite:///path`` or ``postgres://user:password@host:port/name``."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        path = unquote(parsed.path)
        if path:
            # Owner-only, as all of Arena's data (core.private_data).
            Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # The embedded default writes from several threads (the gateway's referees) and
        # processes (the gateway, its worker and the worker's pool): a transaction takes
        # the write lock when it begins (a read turned write later fails at once when
        # another writer holds it), and waits up to 30 s for it. With write-ahead logging
        # readers never wait for the writer nor it for them; a power loss may undo the
        # last commits (synchronous=NORMAL), never corrupt the file.
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path or ":memory:",
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
            },
        }
    if parsed.scheme in {"postgres", "postgresql"}:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": 60,
        }
    raise ValueError(f"DATABASE_URL: unsupported scheme {parsed.scheme!r} (sqlite or postgres)")


#: Django's debug mode; turn it off in production.
DEBUG = env_bool("ARENA_DEBUG", True)
#: Django's secret key; required when ARENA_DEBUG is off.
SECRET_KEY = env_str("ARENA_SECRET_KEY", "insecure-development-key" if DEBUG else "")
if not SECRET_KEY:
    raise ValueError("ARENA_SECRET_KEY must be set when ARENA_DEBUG is off")
#: Host names the site answers to (comma-separated).
ALLOWED_HOSTS = env_list("ARENA_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    # The admin without its autodiscovery at start: the apps' admin modules (and the
    # services they import) are loaded with the URLconf (core/urls.py), which only a
    # process that serves pages reads. A worker, the gateway's online play and each
    # ``manage.py`` command start without them (about 0.3 s of CPU each).
    "django.contrib.admin.apps.SimpleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "core",
    "web",
    "builder",
    "duel_runner",
    "tournament_manager",
    "publisher",
    "api",
    "edge",
]
#: django-ninja's own files, for the API's documentation page (Swagger UI, served by the
#: site, no CDN: api/v1.py): its templates and static files are the site's, found without
#: importing ninja. Listed as an app, ninja (and pydantic) would be imported at every
#: process's start, a worker's and a command's too: 0.15 to 0.2 s of CPU each.
_ninja = find_spec("ninja")
assert _ninja is not None and _ninja.submodule_search_locations
NINJA_FILES = Path(_ninja.submodule_search_locations[0])

AUTH_USER_MODEL = "core.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "core.urls"
WSGI_APPLICATION = "core.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [NINJA_FILES / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in (
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    )
]

#: DATABASE_URL: ``sqlite:///path`` or ``postgres://user:password@host:port/name``.
DATABASES = {
    "default": database_from_url(env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'arena.sqlite3'}"))
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [NINJA_FILES / "static"]
#: Where ``collectstatic`` puts the site's static files (the production image:
#: ``/srv/arena/static``, served by nginx).
STATIC_ROOT = Path(env_str("ARENA_STATIC_ROOT", str(VAR_DIR / "static")))
#: The documentation site that ``/docs/`` serves: ``docs/`` built by mkdocs
#: (``make docs-site``; the demo and scripts/build_images.sh build it).
ARENA_DOCS_ROOT = Path(env_str("ARENA_DOCS_ROOT", str(VAR_DIR / "docs-site")))
#: Uploaded files.
MEDIA_ROOT = Path(env_str("ARENA_MEDIA_ROOT", str(VAR_DIR / "media")))
# Uploads are Arena's alone (core.private_data); static files are public, for an nginx that
# reads them as another user, whatever the umask of the process that collects them.
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage",
        "OPTIONS": {"file_permissions_mode": 0o644, "directory_permissions_mode": 0o755},
    },
}

#: Django's e-mail backend (password resets), and the sender of the e-mails.
EMAIL_BACKEND = env_str("ARENA_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("ARENA_FROM_EMAIL", "arena@localhost")

# --- Celery ----------------------------------------------------------------------

#: Where tasks go. Redis in production (``redis://host:6379/0``). Unset: the embedded
#: broker, a SQLite file beside the database (``core/embedded_broker.py``), whose worker
#: ``run_gateway`` and the ``demo`` command start themselves (``core/embedded_worker.py``);
#: any other process, ``runserver`` included, only sends tasks to it. ``eager``: no broker
#: and no worker, each task runs in the process that started it once its transaction
#: commits (the test suite, benchmarks, scripts).
ARENA_BROKER_URL = env_str("ARENA_BROKER_URL", "")
ARENA_EMBEDDED_BROKER = not ARENA_BROKER_URL
CELERY_TASK_ALWAYS_EAGER = ARENA_BROKER_URL == "eager"
CELERY_BROKER_URL: str | None = (
    None
    if CELERY_TASK_ALWAYS_EAGER
    else ARENA_BROKER_URL or f"arena-sqlite+sqlite:///{VAR_DIR / 'broker.sqlite3'}"
)
#: The embedded broker's worker: its processes (prefork), on every queue.
ARENA_EMBEDDED_WORKER_CONCURRENCY = env_int(
    "ARENA_EMBEDDED_WORKER_CONCURRENCY", max(1, min(4, os.cpu_count() or 1))
)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = "duels"
CELERY_TASK_ROUTES = {
    "builder.tasks.*": {"queue": "build"},
    "duel_runner.tasks.*": {"queue": "duels"},
    "publisher.tasks.*": {"queue": "publish"},
}
#: The queue of games with a seat that waits on the network (an online agent's, a
#: person's, an LLM player's), chosen when their job is sent (``core.jobs.policies``): its
#: workers run many games at once in threads, since each mostly waits.
ARENA_NETWORK_QUEUE = "online"
#: Every queue a task goes to (what the embedded default's one worker consumes).
ARENA_QUEUES = sorted(
    {CELERY_TASK_DEFAULT_QUEUE, ARENA_NETWORK_QUEUE}
    | {route["queue"] for route in CELERY_TASK_ROUTES.values()}
)
# A task is acknowledged when it ends, so a task whose pool process died goes back to the
# queue; its job's conditional claim and lease (not the broker) make sure no work runs twice
# at once, and the job watchdog recovers a killed worker's work (core/jobs/watchdog.py).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis: a message taken by a worker that died goes back to its queue once it has been out
# for the visibility timeout; workers look for such messages every interval x throttle s.
# (The embedded broker cannot, and ignores these: see core/embedded_broker.py.)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Redis: a message taken by a worker that died goes back to its queue after this.
    "visibility_timeout": env_int("ARENA_BROKER_VISIBILITY_TIMEOUT", 3600),
    # How often workers look for such messages...
    "unacked_restore_interval": env_int("ARENA_BROKER_RESTORE_INTERVAL", 10),
    # ...times this factor.
    "unacked_restore_throttle": env_int("ARENA_BROKER_RESTORE_THROTTLE", 10),
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Periodic work, sent by `celery -A core beat` to the task's queue like any other task.
CELERY_BEAT_SCHEDULE = {
    # Revision images no longer needed (superseded, disabled, deleted): docker sandbox only.
    "prune-revision-images": {
        "task": "builder.tasks.prune_revision_images",
        # How often ``celery beat`` prunes revision images.
        "schedule": env_float("ARENA_PRUNE_IMAGES_SECONDS", 3600),
    },
}

# --- Pages' cache -----------------------------------------------------------------


def cache_from_url(url: str) -> dict[str, object]:
    """Django's cache settings from ``redis://host:port/db``, ``file:///folder`` or
    ``locmem://`` (one process's memory: tests of a single process only)."""
    parsed = urlparse(url)
    if parsed.scheme in {"redis", "rediss"}:
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    if parsed.scheme == "file":
        return {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": unquote(parsed.path),
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        }
    if parsed.scheme == "locmem":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    raise ValueError(f"ARENA_CACHE_URL: unsupported scheme {parsed.scheme!r} (redis, file, locmem)")


#: Where the site keeps the pages it shows anonymous visitors (docs/operators/caching.md),
#: shared by every web process and every worker, whose writes make pages stale: a Redis
#: URL (by default the broker's, when it is Redis), else a folder beside the database,
#: which the processes of one machine share (``file:///path``).
ARENA_CACHE_URL = env_str(
    "ARENA_CACHE_URL",
    ARENA_BROKER_URL
    if ARENA_BROKER_URL.startswith(("redis://", "rediss://"))
    else f"file://{VAR_DIR / 'cache' / 'pages'}",
)
CACHES = {"default": cache_from_url(ARENA_CACHE_URL)}
#: How long a kept page may be shown at most. A write to what it shows makes it stale at
#: once; this bounds only what changes with the clock alone ("fitted 5 minutes ago").
ARENA_PAGE_CACHE_SECONDS = env_int("ARENA_PAGE_CACHE_SECONDS", 60)


# --- Arena ---------------------------------------------------------------------

#: Which sandbox backend runs agents: "process" (embedded default) or "docker".
ARENA_SANDBOX = env_str("ARENA_SANDBOX", "process")
#: Caps on uploads: the file itself, files in a zip, and bytes once unpacked.
ARENA_UPLOAD_MAX_BYTES = env_int("ARENA_UPLOAD_MAX_BYTES", 10 * 1024 * 1024)
ARENA_UPLOAD_MAX_FILES = env_int("ARENA_UPLOAD_MAX_FILES", 500)
ARENA_UPLOAD_MAX_UNPACKED_BYTES = env_int("ARENA_UPLOAD_MAX_UNPACKED_BYTES", 50 * 1024 * 1024)
# Django refuses request bodies over this before a view sees them; leave room for the form.
DATA_UPLOAD_MAX_MEMORY_SIZE = ARENA_UPLOAD_MAX_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = ARENA_UPLOAD_MAX_BYTES + 1024 * 1024
#: Where built revisions are unpacked (one folder per revision) for the process sandbox.
ARENA_BUILD_ROOT = Path(env_str("ARENA_BUILD_ROOT", str(VAR_DIR / "builds")))
#: Where the process sandbox makes each agent's private working directory.
ARENA_SANDBOX_ROOT = Path(env_str("ARENA_SANDBOX_ROOT", "/tmp/arena-sandboxes"))
# The process sandbox: the Python that runs agents (empty: Debian's /usr/bin/python3
# where agents are confined, else the referee's own, or a system one the sandbox users may
# run), and, as root, the pool of agents' user ids.
ARENA_AGENT_PYTHON = env_str("ARENA_AGENT_PYTHON", "")
ARENA_SANDBOX_UID_BASE = env_int("ARENA_SANDBOX_UID_BASE", 1_900_000)
ARENA_SANDBOX_UID_COUNT = env_int("ARENA_SANDBOX_UID_COUNT", 1000)
#: Accept and run code from people other than organizers although the process sandbox
#: cannot confine agents here (no bubblewrap, or neither root nor user namespaces): their
#: code could then read every file of this machine that its user may read. Off, such
#: uploads are refused, and a worker that cannot confine agents plays only organizers'
#: code (docs/sandboxes.md); the docker sandbox always confines.
ARENA_ALLOW_UNCONFINED_AGENTS = env_bool("ARENA_ALLOW_UNCONFINED_AGENTS", False)
#: A duel of a game played in turns runs its referee and its agents on one CPU of their
#: own while one is free, where the sandbox can pin them (the process sandbox's): on a
#: virtual machine it halves a quick move's time. An agent that computes while its
#: opponent is on move then takes from the opponent's CPU: turn it off where agents may
#: think on their opponent's time (docs/sandboxes.md).
ARENA_DUEL_SHARE_CPU = env_bool("ARENA_DUEL_SHARE_CPU", True)
#: The former names of the two settings below (when only the docker sandbox had a warm
#: pool), still read when the new ones are not set.
ARENA_DOCKER_POOL_SIZE = env_int("ARENA_DOCKER_POOL_SIZE", 8)
ARENA_DOCKER_POOL_IDLE_SECONDS = env_float("ARENA_DOCKER_POOL_IDLE_SECONDS", 60.0)
#: Agents each worker process keeps started ahead, in either sandbox, for the next duels
#: of the revisions it plays (0 turns the pool off), and how long one may wait.
ARENA_SANDBOX_POOL_SIZE = env_int("ARENA_SANDBOX_POOL_SIZE", ARENA_DOCKER_POOL_SIZE)
ARENA_SANDBOX_POOL_IDLE_SECONDS = env_float(
    "ARENA_SANDBOX_POOL_IDLE_SECONDS", ARENA_DOCKER_POOL_IDLE_SECONDS
)
#: How long a duel stays claimed without a heartbeat from its worker (renewed every third
#: of it while the duel runs); a killed worker's duel is taken over after this.
ARENA_DUEL_LEASE_SECONDS = env_int("ARENA_DUEL_LEASE_SECONDS", 60)
#: Hard limits on one task: building a revision, playing a duel (validation included).
ARENA_BUILD_TIMEOUT_SECONDS = env_int("ARENA_BUILD_TIMEOUT_SECONDS", 600)
ARENA_DUEL_TIMEOUT_SECONDS = env_int("ARENA_DUEL_TIMEOUT_SECONDS", 3600)

#: How long a revision's build, validation or publication stays claimed without a
#: heartbeat from its worker (renewed every third of it); a killed worker's step is queued
#: again after this.
ARENA_REVISION_LEASE_SECONDS = env_int("ARENA_REVISION_LEASE_SECONDS", 60)
#: A build or validation whose worker stopped this many times fails, with the reason.
ARENA_REVISION_MAX_ATTEMPTS = env_int("ARENA_REVISION_MAX_ATTEMPTS", 3)
#: A publication is tried this many times (a refused push is tried again after 1, 2, 4,
#: 8... minutes) before it shows failed.
ARENA_PUBLICATION_MAX_ATTEMPTS = env_int("ARENA_PUBLICATION_MAX_ATTEMPTS", 6)
#: Queued work (a job of any kind: a build, validation, publication, duel or evaluation)
#: whose queue message was sent this long ago without a worker taking it is sent again by
#: the watchdog: the message may have been lost. Each re-send doubles the wait before the
#: next one.
ARENA_RESEND_AFTER_SECONDS = env_int("ARENA_RESEND_AFTER_SECONDS", 300)
#: Queued work fails after this many re-sends made while no worker ran anything of its
#: kind (none takes it up); re-sends made while workers are busy with its kind do not
#: count, since a long tournament legitimately keeps duels queued for hours.
ARENA_MAX_RESENDS = env_int("ARENA_MAX_RESENDS", 5)

# --- Tournament manager -----------------------------------------------------------
#: A duel whose worker lost its lease this many times is failed (an infrastructure
#: failure, never a result) instead of being queued again.
ARENA_DUEL_MAX_ATTEMPTS = env_int("ARENA_DUEL_MAX_ATTEMPTS", 3)
#: Duels a ladder keeps queued or running at once (between hosted agents) unless the ladder
#: sets its own pace in the admin (*Concurrent duels*), and never as
#: many as would leave no hosted agent idle: a ladder of four plays one duel at a time, so
#: the two who just finished are not paired again only for want of anyone else.
ARENA_LADDER_CONCURRENT_DUELS = env_int("ARENA_LADDER_CONCURRENT_DUELS", 2)
#: A standing ladder (each game's own, ``Environment.standing_competition``) asks for duels
#: for a revision until it has played this many there; then it plays only as a newer
#: entry's opponent, so a standing ladder whose entries have all played that many rests.
ARENA_STANDING_LADDER_DUELS = env_int("ARENA_STANDING_LADDER_DUELS", 10)
#: Ladder matchmaking: waiting this long since its last duel adds 1 to the score of an
#: agent's pairings, more than any pairing's predicted quality (a draw probability, under
#: 0.5 for two players) is worth, so nobody waits forever for a close match.
ARENA_LADDER_WAIT_SECONDS = env_float("ARENA_LADDER_WAIT_SECONDS", 600)
#: A ladder's standings (a Bradley-Terry fit of all its matches) are computed again at
#: most this often, by the tournament manager, when duels ended since: with thousands of
#: agents a fit takes seconds, which no duel's end should wait for.
ARENA_LADDER_STANDINGS_SECONDS = env_float("ARENA_LADDER_STANDINGS_SECONDS", 10)
#: Ladder matchmaking: agents with fewer duels than this in the ladder get a bonus.
ARENA_LADDER_NEWCOMER_DUELS = env_int("ARENA_LADDER_NEWCOMER_DUELS", 5)
#: A competitor whose last this many duels since its revision was validated all failed
#: (its server down, its agent unable to start: not a lost game) is paused in ladders until
#: it validates again, so that one broken entry cannot fill a ladder with failures.
ARENA_LADDER_PAUSE_AFTER_FAILURES = env_int("ARENA_LADDER_PAUSE_AFTER_FAILURES", 3)
#: The published leaderboard ranks a revision once it has played this many rated matches;
#: until then its entry is provisional, listed after the ranked ones.
ARENA_LEADERBOARD_PROVISIONAL_MATCHES = env_int("ARENA_LEADERBOARD_PROVISIONAL_MATCHES", 6)

# --- REST API ------------------------------------------------------------------------
#: Requests allowed per token holder (a user, whichever of their tokens it is) and per
#: anonymous address ("N/s", "N/min", "N/h"); over it the API answers 429 with
#: Retry-After. Counted where ARENA_RATES_URL says (api/rates.py).
ARENA_API_TOKEN_RATE = env_str("ARENA_API_TOKEN_RATE", "600/min")
ARENA_API_ANONYMOUS_RATE = env_str("ARENA_API_ANONYMOUS_RATE", "120/min")
#: The largest request body the API reads, uploads aside (they may be as large as
#: ARENA_UPLOAD_MAX_BYTES); over it the answer is 413.
ARENA_API_MAX_BODY_BYTES = env_int("ARENA_API_MAX_BODY_BYTES", 64 * 1024)

# --- Behind a reverse proxy ----------------------------------------------------------
#: On when every request comes through a reverse proxy that sets X-Forwarded-For to the
#: client's address and X-Forwarded-Proto to its scheme, replacing what the client sent
#: (nginx/ does; production turns this on). Then the API's per-address rates count
#: that address and Django knows a request came over HTTPS (its CSRF check compares the
#: page's scheme with the form's Origin). Off, the embedded default, anyone could send
#: these headers: they are ignored, and the address is the connection's.
ARENA_BEHIND_PROXY = env_bool("ARENA_BEHIND_PROXY", False)
if ARENA_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Online play ---------------------------------------------------------------------
#: The seat bus between the network gateway and the duel workers: Redis in production
#: (``redis://host:6379/1``); empty, the embedded default, where the gateway process
#: referees its online duels itself (``manage.py run_gateway``).
ARENA_ONLINE_BUS_URL = env_str("ARENA_ONLINE_BUS_URL", "")
#: Seconds added to each deadline of an online agent, and taken off each measured time
#: before its time bank is charged: the network round trip is not thinking time.
ARENA_ONLINE_ALLOWANCE_SECONDS = env_float("ARENA_ONLINE_ALLOWANCE_SECONDS", 0.5)
#: How long an online agent may stay disconnected during a duel and resume; after it, it
#: loses the match in play and the remaining ones by timeout.
ARENA_ONLINE_GRACE_SECONDS = env_float("ARENA_ONLINE_GRACE_SECONDS", 30.0)
#: An online agent that has waited this long in the queue with no online opponent is
#: paired with hosted agents.
ARENA_ONLINE_FILL_SECONDS = env_float("ARENA_ONLINE_FILL_SECONDS", 60.0)
#: Duels with an online seat a ladder keeps queued or running at once (hosted-only duels
#: have ARENA_LADDER_CONCURRENT_DUELS).
ARENA_ONLINE_CONCURRENT_DUELS = env_int("ARENA_ONLINE_CONCURRENT_DUELS", 100)
#: Replies (one per move) and other requests an online model may send to the gateway,
#: per model (leaving the queue is never refused); also a person's game page, per user.
ARENA_ONLINE_RATE = env_str("ARENA_ONLINE_RATE", "50/s")
#: Where request rates are counted: a Redis URL, shared by every gateway and web process
#: (by default the seat bus's, ARENA_ONLINE_BUS_URL); empty, each process's memory.
ARENA_RATES_URL = env_str("ARENA_RATES_URL", ARENA_ONLINE_BUS_URL)
#: An online agent's stream is ended after this long (its client reconnects and resumes),
#: so that no connection is held by one gateway forever; a long poll waits at most
#: ARENA_ONLINE_POLL_SECONDS.
ARENA_ONLINE_STREAM_SECONDS = env_float("ARENA_ONLINE_STREAM_SECONDS", 3600.0)
ARENA_ONLINE_POLL_SECONDS = env_float("ARENA_ONLINE_POLL_SECONDS", 60.0)
#: How long a client of the network gateway (and of nginx, whose timeouts come from
#: these) may take to send a request: its headers within ARENA_REQUEST_HEADER_SECONDS of
#: the connection's opening (or of the request's first byte, on a kept-alive connection),
#: its body within ARENA_REQUEST_BODY_SECONDS of its headers. Slower senders are cut off
#: (408).
ARENA_REQUEST_HEADER_SECONDS = env_float("ARENA_REQUEST_HEADER_SECONDS", 10.0)
ARENA_REQUEST_BODY_SECONDS = env_float("ARENA_REQUEST_BODY_SECONDS", 20.0)
#: Connections one client address may hold open at once (429 beyond): an online model
#: holds two (its stream, and its replies on a kept-alive one), a browser about six, so
#: a classroom behind one NAT fits. Behind the proxy (ARENA_BEHIND_PROXY) nginx counts
#: each client's requests in progress and the gateway counts none: every connection
#: comes from the proxy.
ARENA_CONNECTIONS_PER_ADDRESS = env_int("ARENA_CONNECTIONS_PER_ADDRESS", 256)
if ARENA_CONNECTIONS_PER_ADDRESS < 1:
    raise ValueError("ARENA_CONNECTIONS_PER_ADDRESS must be 1 or more")

# --- Watching duels live --------------------------------------------------------------
#: A duel's worker sends its spectators' events in batches, at most this often.
ARENA_LIVE_FLUSH_SECONDS = env_float("ARENA_LIVE_FLUSH_SECONDS", 0.2)
#: How often a live stream of the gateway looks for a duel's new events.
ARENA_LIVE_POLL_SECONDS = env_float("ARENA_LIVE_POLL_SECONDS", 0.5)
#: Live streams one gateway process holds at once, and per client address.
ARENA_LIVE_WATCHERS = env_int("ARENA_LIVE_WATCHERS", 500)
ARENA_LIVE_WATCHERS_PER_ADDRESS = env_int("ARENA_LIVE_WATCHERS_PER_ADDRESS", 8)

# --- People playing in the browser ------------------------------------------------------
#: A person's time for each move, and their time bank for a match beyond it (every seat
#: of such a game gets this clock); also how long the page may take to be ready, and
#: how long a closed tab is waited for before its game is lost.
ARENA_HUMAN_MOVE_SECONDS = env_float("ARENA_HUMAN_MOVE_SECONDS", 60.0)
ARENA_HUMAN_TIME_BANK_SECONDS = env_float("ARENA_HUMAN_TIME_BANK_SECONDS", 300.0)
#: Games in the browser one user may have queued or running at once.
ARENA_HUMAN_GAMES_PER_USER = env_int("ARENA_HUMAN_GAMES_PER_USER", 2)

# --- Test duels ------------------------------------------------------------------------
#: Test duels (an owner's agent against an agent of their choice, unrated) one user may
#: start in an hour.
ARENA_TEST_DUELS_PER_HOUR = env_int("ARENA_TEST_DUELS_PER_HOUR", 12)

# --- LLM players -----------------------------------------------------------------------
#: The Fernet key (``Fernet.generate_key()``) LLM players' API keys are encrypted with.
#: Empty: derived from SECRET_KEY, so rotating SECRET_KEY would lose every stored key;
#: production sets it (``core.secrets``).
ARENA_SECRETS_KEY = env_str("ARENA_SECRETS_KEY", "")
#: Where ``file:<name>`` secret references of LLM players are read (on the duel workers).
ARENA_LLM_SECRETS_DIR = env_str("ARENA_LLM_SECRETS_DIR", "/run/secrets")
#: Who may point an LLM player at this machine or a private network (the workers would
#: send requests there): everyone, organizers or nobody. Everyone on the embedded default
#: (a model served on the same laptop); organizers only in production.
ARENA_LLM_PRIVATE_URLS = env_str("ARENA_LLM_PRIVATE_URLS", "everyone" if DEBUG else "organizers")
if ARENA_LLM_PRIVATE_URLS not in ("everyone", "organizers", "nobody"):
    raise ValueError("ARENA_LLM_PRIVATE_URLS must be everyone, organizers or nobody")

# --- Publisher --------------------------------------------------------------------

#: Where the validated revisions of public competitors are pushed: a git URL or the path of
#: a (bare) repository. Empty: publishing is off.
ARENA_PUBLISH_REPOSITORY = env_str("ARENA_PUBLISH_REPOSITORY", "")
#: The branch published to.
ARENA_PUBLISH_BRANCH = env_str("ARENA_PUBLISH_BRANCH", "main")
#: Files of an upload over this size are left out of the repository (its README names them).
ARENA_PUBLISH_MAX_FILE_BYTES = env_int("ARENA_PUBLISH_MAX_FILE_BYTES", 1024 * 1024)
#: Author and committer of the publication commits.
ARENA_PUBLISH_AUTHOR = env_str("ARENA_PUBLISH_AUTHOR", "Arena <arena@localhost>")
#: The publisher's local clone of the repository (shared by the workers of one machine).
ARENA_PUBLISH_WORKDIR = Path(env_str("ARENA_PUBLISH_WORKDIR", str(VAR_DIR / "publisher")))

# --- Docker builds ---------------------------------------------------------------
#: Cap on the wheels a revision's requirements.txt downloads (all of them together).
ARENA_WHEELS_MAX_BYTES = env_int("ARENA_WHEELS_MAX_BYTES", 200 * 1024 * 1024)
#: Project names (comma-separated) requirements may not name or pull in; checked first.
ARENA_REQUIREMENTS_DENY = env_list("ARENA_REQUIREMENTS_DENY", [])
#: When not empty, the only project names requirements may name or pull in.
ARENA_REQUIREMENTS_ALLOW = env_list("ARENA_REQUIREMENTS_ALLOW", [])
#: Downloaded wheels, one folder per set of requirements, reused by later builds.
ARENA_WHEEL_CACHE = Path(env_str("ARENA_WHEEL_CACHE", str(VAR_DIR / "cache" / "wheels")))
#: Names this deployment on a shared Docker engine (its images carry it), so that one
#: deployment's clean-up never removes another's images; default: from the database.
ARENA_INSTANCE = env_str("ARENA_INSTANCE", "")
#: The image every agent runs on in the docker sandbox; empty: this checkout's base image,
#: built when missing (``manage.py build_base_image``).
ARENA_DOCKER_IMAGE = env_str("ARENA_DOCKER_IMAGE", "")
#: How the docker sandbox's base image is made when ARENA_DOCKER_IMAGE is empty: from the
#: Debian mirror alone (``debootstrap``) or from a registry (``dockerfile``); where
#: debootstrap downloads from, and where its root file system is kept between builds.
ARENA_BASE_IMAGE_SOURCE = env_str("ARENA_BASE_IMAGE_SOURCE", "debootstrap")
if ARENA_BASE_IMAGE_SOURCE not in ("debootstrap", "dockerfile"):
    raise ImproperlyConfigured(
        f"ARENA_BASE_IMAGE_SOURCE={ARENA_BASE_IMAGE_SOURCE!r}: choose debootstrap or dockerfile"
    )
ARENA_DEBIAN_MIRROR = env_str("ARENA_DEBIAN_MIRROR", "http://deb.debian.org/debian")
ARENA_BASE_IMAGE_CACHE = Path(
    env_str("ARENA_BASE_IMAGE_CACHE", str(VAR_DIR / "cache" / "base-image"))
)
#: Seconds an agent's container may take to start and connect (the platform's time).
ARENA_DOCKER_CONNECT_TIMEOUT = env_float("ARENA_DOCKER_CONNECT_TIMEOUT", 30.0)
#: The port ``manage.py demo`` prints in its addresses (scripts/demo.sh serves on it).
ARENA_PORT = env_int("ARENA_PORT", 8000)
