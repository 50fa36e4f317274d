# The application image: the web site (gunicorn), the network gateway, every Celery
# worker and beat, the tournament manager, the engine proxy and nginx, all from one
# image (docker-compose.yml picks the command). It is built by scripts/build_images.sh
# on the project's own Debian root file system (BASE, arena-rootfs:<hash>, made with
# debootstrap by `manage.py build_base_image`): no container registry is used. Debian
# packages come from the Debian mirror; Python packages, at the pins of pyproject.toml,
# from the wheels the script fetched on the host.
ARG BASE
FROM ${BASE} AS dependencies
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends python3-venv \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/opt/arena/venv/bin:/usr/bin:/bin
# The pinned dependencies, from the wheels scripts/build_images.sh fetched on the host
# (var/wheelhouse): no index is reached from the build. In a stage of its own, so the
# wheels are not kept in the image.
COPY var/wheelhouse /tmp/wheelhouse
RUN python3 -m venv /opt/arena/venv \
    && pip install --no-cache-dir -q --disable-pip-version-check --no-index \
        --find-links /tmp/wheelhouse -r /tmp/wheelhouse/requirements.txt

# The source tree without var/: the build context holds the wheels for the stage above,
# which the image must not carry.
FROM ${BASE} AS source
COPY . /src
RUN rm -rf /src/var

FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/arena/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# nginx (nginx/start.sh runs it as the service user, its pid and temporary files in
# /tmp), CA certificates (LLM players' HTTPS servers), git (the publisher pushes to a
# repository), PostgreSQL's client (backups: pg_dump and pg_restore).
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends \
        ca-certificates nginx git postgresql-client \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc /usr/share/man

COPY --from=dependencies /opt/arena/venv /opt/arena/venv

# The user every service runs as; its group also owns the engine proxy's socket folder.
# Its data is its own (core.private_data): the named volumes start from these folders' modes.
RUN groupadd --gid 10100 arena \
    && useradd --uid 10100 --gid 10100 --home-dir /srv/arena --no-create-home \
        --shell /usr/sbin/nologin arena \
    && mkdir -p /srv/arena/static /srv/arena/media /srv/arena/var /srv/arena/publisher \
        /run/arena-engine \
    && chown -R arena:arena /srv/arena /run/arena-engine \
    && chmod 0700 /srv/arena/media /srv/arena/var /srv/arena/publisher

COPY --chown=root:root --from=source /src /opt/arena/app
# The documentation site, built by scripts/build_images.sh: the site serves it at /docs/.
COPY --chown=root:root var/docs-site /opt/arena/docs-site
WORKDIR /opt/arena/app
ENV PYTHONPATH=/opt/arena/app:/opt/arena/app/sdk \
    ARENA_DOCS_ROOT=/opt/arena/docs-site \
    ARENA_VAR_DIR=/srv/arena/var \
    ARENA_MEDIA_ROOT=/srv/arena/media \
    ARENA_STATIC_ROOT=/srv/arena/static \
    ARENA_DEBUG=0

# Static files are part of the image (nginx serves them); bytecode compiled once, as the
# code is read-only for the services. Only what was copied from the checkout (whatever
# its umask) is made readable: a chmod of the virtualenv, readable already, would copy
# all of it into this layer again (half a gigabyte, 2026-12-04).
RUN ARENA_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput -v 0 \
    && python -m compileall -q /opt/arena/app \
    && chmod -R a+rX /opt/arena/app /opt/arena/docs-site /srv/arena/static

USER arena
# Each service's own check is set in docker-compose.yml; this one (the web site) is the
# default for a container started from the image alone.
HEALTHCHECK --interval=15s --timeout=6s --start-period=30s --retries=3 \
    CMD ["python", "-m", "core.healthcheck", "http", "http://127.0.0.1:8000/healthz"]
EXPOSE 8000
CMD ["gunicorn", "core.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
