"""The gateway's connections, one at a time, in this process: what ``api.connections``
does to a connection the moment it is accepted, and how it counts clients."""

from __future__ import annotations

import asyncio
import socket

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from api.connections import (
    UNACKNOWLEDGED_SECONDS,
    ConnectionLimits,
    client_key,
    limited_protocol,
)
from tests.support.loops import run_apart


async def _nothing(scope, receive, send) -> None:
    pass


@pytest.mark.skipif(not hasattr(socket, "TCP_USER_TIMEOUT"), reason="Linux only")
def test_a_client_that_vanishes_without_closing_is_dropped_after_its_unacknowledged_time():
    """A stream pings every 15 s: unacknowledged for UNACKNOWLEDGED_SECONDS, the kernel
    drops the connection, and with it the model's presence (not after 15 minutes)."""
    protocol_class = limited_protocol(
        ConnectionLimits(header_seconds=10, body_seconds=20, per_address=None)
    )
    config = Config(app=_nothing, lifespan="off", http=protocol_class)
    accepted: list[socket.socket] = []

    async def accept_one() -> None:
        loop = asyncio.get_running_loop()

        def protocol() -> asyncio.Protocol:
            made = protocol_class(config, ServerState(), {}, loop)
            original = made.connection_made

            def connection_made(transport: asyncio.Transport) -> None:
                original(transport)
                accepted.append(transport.get_extra_info("socket"))

            # This one connection's method, wrapped to record its socket.
            made.connection_made = connection_made  # type: ignore[method-assign]
            return made

        server = await loop.create_server(protocol, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        while not accepted:
            await asyncio.sleep(0.01)
        timeout = accepted[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT)
        writer.close()
        server.close()
        await server.wait_closed()
        assert timeout == UNACKNOWLEDGED_SECONDS * 1000

    run_apart(accept_one)


def test_a_client_is_counted_by_its_address_or_its_ipv6_network():
    assert client_key("192.0.2.7") == "192.0.2.7"
    # One subscriber holds a whole /64: rotating through it is the same client.
    assert client_key("2001:db8:1:2::5") == client_key("2001:db8:1:2:ffff::9")
    assert client_key("2001:db8:1:2::5") != client_key("2001:db8:1:3::5")
    assert client_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_key("?") == "?"
