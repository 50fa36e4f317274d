# PostgreSQL 15 for docker-compose.yml, from Debian's packages on the project's own root
# file system (BASE, arena-rootfs:<hash>): no registry image. Built by
# scripts/build_images.sh. The data folder is a volume; on its first start the
# entrypoint creates the cluster, the role and the database from the environment.
ARG BASE
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
    PATH=/usr/lib/postgresql/15/bin:/usr/local/bin:/usr/bin:/bin \
    PGDATA=/var/lib/postgresql/data
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc /usr/share/man \
    && mkdir -p "$PGDATA" /run/postgresql \
    && chown -R postgres:postgres "$PGDATA" /run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/arena-postgres
# Whatever the umask of the checkout it came from (Arena's own processes use 077).
RUN chmod 0755 /usr/local/bin/arena-postgres
USER postgres
HEALTHCHECK --interval=5s --timeout=5s --start-period=30s --retries=5 \
    CMD ["pg_isready", "-h", "127.0.0.1", "-q"]
EXPOSE 5432
ENTRYPOINT ["/usr/local/bin/arena-postgres"]
