# Redis for docker-compose.yml (the Celery broker and the online seats' bus), from
# Debian's package on the project's own root file system (BASE): no registry image.
# Built by scripts/build_images.sh. The password is read from REDIS_PASSWORD_FILE.
ARG BASE
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends redis-server redis-tools \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc /usr/share/man \
    && mkdir -p /data && chown redis:redis /data
COPY redis-entrypoint.sh /usr/local/bin/arena-redis
# Whatever the umask of the checkout it came from (Arena's own processes use 077).
RUN chmod 0755 /usr/local/bin/arena-redis
USER redis
WORKDIR /data
HEALTHCHECK --interval=5s --timeout=5s --start-period=10s --retries=5 \
    CMD ["sh", "-c", "REDISCLI_AUTH=$(cat \"$REDIS_PASSWORD_FILE\") redis-cli -h 127.0.0.1 ping | grep -q PONG"]
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/arena-redis"]
