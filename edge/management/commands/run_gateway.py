"""``manage.py run_gateway``: the network gateway for online agents, an ASGI server
(uvicorn) of the whole site that holds the clients' long-lived streams.

With a Redis seat bus (``ARENA_ONLINE_BUS_URL``) it only holds connections: duel
workers on the ``online`` queue referee the duels. Without one (the embedded default) it
referees its online duels itself, in threads of this process, and ``--manager`` also
runs the watchdog's and the tournament manager's passes here. With the embedded broker
(``ARENA_BROKER_URL`` unset) it also starts the Celery worker that builds, validates and
plays everything else (``core/embedded_worker.py``) and stops it on exit, so that one
command plays everything.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from core.embedded_worker import EmbeddedWorker, site_worker
from core.management.daemon import serve


class Command(BaseCommand):
    help = (
        "Serve the site and online play (/api/v1/online/) with uvicorn. Without "
        "ARENA_ONLINE_BUS_URL, also referee online duels in this process; --manager also "
        "runs the watchdog and the tournament manager here. Without ARENA_BROKER_URL (the "
        "embedded broker), also run a Celery worker on every queue in a child process, "
        "unless --no-worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=settings.ARENA_PORT)
        parser.add_argument(
            "--manager",
            action="store_true",
            help="also run the watchdog's and the tournament manager's passes in this process",
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=1.0,
            help="with --manager: seconds between the manager's idle passes (default 1)",
        )
        parser.add_argument(
            "--no-worker",
            action="store_true",
            help="with the embedded broker: start no Celery worker (one runs elsewhere)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        # SIGTERM (kill, systemd, docker stop) as a Ctrl-C: uvicorn shuts down in order,
        # then raises the signal again, whose default action would end the process there,
        # before the worker, the manager and the online duels are stopped below.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            if not settings.ARENA_EMBEDDED_BROKER or options["no_worker"]:
                self.serve(options, worker=None)
                return
            with site_worker(report=logging.getLogger("core.embedded_worker").error) as worker:
                try:
                    self.serve(options, worker=worker)
                finally:
                    self.stdout.write("Stopping the Celery worker (its running tasks may finish).")
        except KeyboardInterrupt:
            # uvicorn has shut down in order and raises Ctrl-C (or SIGTERM) again: nothing
            # to show.
            pass
        self.stdout.write("Stopped.")

    def serve(self, options: dict[str, Any], *, worker: EmbeddedWorker | None) -> None:
        import uvicorn

        from api.connections import ConnectionLimits, limited_protocol
        from duel_runner.online import OnlineDuelRunner

        runner = None
        if not settings.ARENA_ONLINE_BUS_URL:
            runner = OnlineDuelRunner(concurrency=settings.ARENA_ONLINE_CONCURRENT_DUELS)
            runner.start()
        stopping = threading.Event()
        manager = None
        if options["manager"]:
            manager = threading.Thread(
                target=self._manage, args=(stopping, options["interval"]), daemon=True
            )
            manager.start()
        where = f"http://{options['host']}:{options['port']}"
        self.stdout.write(
            f"Gateway on {where} (online play at {where}/api/v1/online/); online duels "
            + ("refereed by the duel workers" if runner is None else "refereed here")
            + ("; the watchdog and the tournament manager run here" if manager else "")
            + (
                f"; builds, validations and duels played by a Celery worker (pid "
                f"{worker.pid}, log {worker.log_path})"
                if worker
                else ""
            )
            + ". Ctrl-C stops it."
        )
        config = uvicorn.Config(
            "edge.asgi:application",
            host=options["host"],
            port=options["port"],
            lifespan="off",
            log_level="warning",
            # Idle keep-alive connections go after this; streams are kept alive by pings.
            timeout_keep_alive=20,
            backlog=4096,
            http=limited_protocol(
                ConnectionLimits(
                    header_seconds=settings.ARENA_REQUEST_HEADER_SECONDS,
                    body_seconds=settings.ARENA_REQUEST_BODY_SECONDS,
                    # Behind the proxy every peer is the proxy, which caps each client.
                    per_address=None
                    if settings.ARENA_BEHIND_PROXY
                    else settings.ARENA_CONNECTIONS_PER_ADDRESS,
                )
            ),
            # Behind the proxy (the only peer that reaches this port then), a client's
            # address is the proxy's X-Forwarded-For: the per-address rates count it.
            # Otherwise the header is the client's own word, from loopback too (a tunnel
            # or a local TLS front): never read.
            proxy_headers=settings.ARENA_BEHIND_PROXY,
            forwarded_allow_ips="*" if settings.ARENA_BEHIND_PROXY else None,
        )
        try:
            uvicorn.Server(config).run()
        finally:
            stopping.set()
            if manager is not None:
                manager.join(timeout=10)
            if runner is not None:
                runner.stop()

    @staticmethod
    def _manage(stopping: threading.Event, interval: float) -> None:
        """The embedded default's daemons, in this thread: the watchdog's pass over every
        job, then the tournament manager's."""
        from core.jobs.watchdog import jobs_recover
        from tournament_manager import daemon

        serve(
            [jobs_recover, daemon.run_once],
            stopping=stopping,
            interval=interval,
            logger=logging.getLogger("tournament_manager.daemon"),
        )
