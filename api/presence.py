"""Whether an online model's client is here: its streams on this process and the
gateway's presence pass (the seat bus is told the gateway is alive; the database, when
each streaming model was last seen). The gateway's streams (``edge.gateway``) and the
API's long poll (``api.online``) both mark a client present."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections import Counter

from asgiref.sync import sync_to_async

from api.auth import Access, Refusal, refusal
from api.tokens import Holder, token_checks
from core.services.online import online_seen, seat_bus

#: This process, as the seat bus knows its gateway.
GATEWAY_NAME = f"{socket.gethostname()}:{os.getpid()}"


#: The models whose client holds a stream on this process, counted per stream.
streaming: Counter[int] = Counter()
_presence_tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
#: How often the gateway tells the seat bus it is alive and the database whom it saw.
PRESENCE_SECONDS = 5.0


async def _presence_loop() -> None:
    """Tell the seat bus that this gateway is alive (a referee gives an absent client its
    grace period only while a gateway could take it back), and the database when each
    streaming model was last seen (the site shows it)."""
    bus = seat_bus()
    while True:
        with contextlib.suppress(Exception):
            await bus.gateway_heartbeat(GATEWAY_NAME)
            await sync_to_async(online_seen)(competitor_ids=list(streaming))
        await asyncio.sleep(PRESENCE_SECONDS)


def presence_start() -> None:
    """Start this event loop's presence task, if it is not running."""
    loop = asyncio.get_running_loop()
    for closed in [other for other in _presence_tasks if other.is_closed()]:
        del _presence_tasks[closed]
    task = _presence_tasks.get(loop)
    if task is None or task.done():
        _presence_tasks[loop] = loop.create_task(_presence_loop())


async def presence_seen(holder: Holder) -> None:
    """The model's client is here now (it need not wait for the next presence pass)."""
    presence_start()
    await sync_to_async(online_seen)(competitor_ids=[holder.model_id])


def stopped_refusal(holder: Holder) -> Refusal:
    """Why a model token whose streams were stopped no longer plays."""
    refused = refusal(Access.PLAY, token_checks().now(holder.digest))
    if refused is None or refused.status == 401:
        return Refusal(401, "unauthorized", "The token was revoked, or its model or owner removed.")
    return refused
