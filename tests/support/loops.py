"""Running a coroutine from a synchronous test, whatever the test's thread is doing: on an
event loop of its own, in a thread of its own (a browser test's Playwright leaves a loop
running in the main thread, where ``asyncio.run`` and ``async_to_sync`` refuse to run)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import TypeVar

Result = TypeVar("Result")


def run_apart(coroutine: Callable[[], Awaitable[Result]]) -> Result:
    """``coroutine()``'s result, run to its end on a new loop in a new thread."""

    async def main() -> Result:
        return await coroutine()

    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, main()).result()
