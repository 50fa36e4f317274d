"""``python -m engine_proxy``: serve the filtered engine socket until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import grp
import logging
import os
import signal
import sys
from types import FrameType

from engine_proxy.policy import Policy
from engine_proxy.server import EngineProxy

logger = logging.getLogger("engine_proxy")


def _bind_root(value: str) -> str:
    resolved = os.path.realpath(value)
    if not os.path.isdir(resolved):
        raise argparse.ArgumentTypeError(f"{value} is not a folder")
    if resolved == "/":
        raise argparse.ArgumentTypeError("the whole file system cannot be a bind root")
    return resolved


def _group(value: str) -> int:
    if value.isdigit():
        return int(value)
    try:
        return grp.getgrnam(value).gr_gid
    except KeyError:
        raise argparse.ArgumentTypeError(f"no group {value}") from None


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m engine_proxy",
        description="A Docker engine socket that lets through only the calls Arena's "
        "workers make, in the shape they make them (docs/sandboxes.md, 'The engine proxy').",
    )
    parser.add_argument("--listen", required=True, help="the socket to create for the workers")
    parser.add_argument("--engine", default="/var/run/docker.sock", help="the real engine's socket")
    parser.add_argument(
        "--bind-root",
        action="append",
        type=_bind_root,
        required=True,
        metavar="FOLDER",
        help="a host folder below which containers may bind folders (the workers' "
        "ARENA_SANDBOX_ROOT); repeatable. Must have the same path here as on the host",
    )
    parser.add_argument("--max-memory-mb", type=int, default=4096, help="per container or build")
    parser.add_argument("--max-cpus", type=float, default=2.0, help="per container")
    parser.add_argument("--max-pids", type=int, default=1024, help="per container")
    parser.add_argument(
        "--max-stream-mb", type=int, default=4096, help="a build context or an imported image"
    )
    parser.add_argument(
        "--socket-mode", type=lambda text: int(text, 8), default=0o660, help="octal, e.g. 660"
    )
    parser.add_argument("--socket-group", type=_group, help="group (name or id) of the socket")
    parser.add_argument(
        "--allow-base-images",
        action="store_true",
        help="let workers import and build the base image (arena-rootfs, arena-base) too; "
        "leave off where the operator builds it (manage.py build_base_image on the host), "
        "since images built on it (the application's) would trust what a worker put there",
    )
    parser.add_argument("--verbose", action="store_true", help="also log every forwarded call")
    return parser


def main(argv: list[str] | None = None) -> None:
    options = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if options.verbose else logging.INFO,
        format="%(asctime)s engine_proxy %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    rules = Policy(
        bind_roots=tuple(options.bind_root),
        max_memory_bytes=options.max_memory_mb * 1024 * 1024,
        max_nano_cpus=int(options.max_cpus * 1_000_000_000),
        max_pids=options.max_pids,
        max_stream_bytes=options.max_stream_mb * 1024 * 1024,
        base_images=options.allow_base_images,
    )
    server = EngineProxy(
        options.listen,
        options.engine,
        rules,
        socket_mode=options.socket_mode,
        socket_group=options.socket_group,
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    logger.info(
        "listening on %s for %s; binds below %s", options.listen, options.engine,
        ", ".join(rules.bind_roots),
    )  # fmt: skip
    try:
        server.serve_forever()
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        server.server_close()
        logger.info("stopped")


if __name__ == "__main__":
    main()
