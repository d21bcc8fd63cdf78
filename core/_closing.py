"""`with` and `async with` for the things that hold interpreters, servers or processes.

Five classes wrote the same four methods around `close()`; they inherit them from here.
"""

from __future__ import annotations

import asyncio

from typing_extensions import Self

__all__ = ["Closing", "Starting"]


class Closing:
    """`with x:` / `async with x:` close `x` at the end.

    The async form closes on a thread: closing may wait for an interpreter or a process to
    wind down, which must not block the event loop.
    """

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)


class Starting(Closing):
    """`Closing` for things that also start at the beginning of the `with` block."""

    def start(self) -> Self:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.start)
