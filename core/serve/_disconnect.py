"""A client that goes away mid-request stops the cell running for it.

`ThreadingHTTPServer` gives a request's handler the client's socket, and no word when the
client closes it: the handler is blocked in the upstream call or in a cell meanwhile. So
while a request with code is served, its socket is looked at (`cancel_when`): readable with
nothing to read means the client closed its end, and the cell is stopped (its sandbox is the
request's own, so nothing else is lost), no further code runs, and no upstream round starts.
A client that half-closes after its request (`shutdown(SHUT_WR)`) looks the same; HTTP
clients do not.
"""

from __future__ import annotations

import contextlib
import functools
import select
import socket
from collections.abc import Iterator

from ..adapters import cancel_when
from ..engine import Cancel

__all__ = ["GONE", "ClientGone", "gone_check", "watching"]

GONE = "the client disconnected"


class ClientGone(ConnectionResetError):
    """The request's client went away; nobody is left to answer."""


@contextlib.contextmanager
def watching(connection: socket.socket) -> Iterator[Cancel]:
    """A `Cancel` that fires when the client closes `connection`, until the block ends."""
    with cancel_when(functools.partial(_gone, connection)) as cancel:
        yield cancel


def gone_check(cancel: Cancel | None) -> None:
    """Raise `ClientGone` if the client went away (no more work for it)."""
    if cancel is not None and cancel.why is not None:
        raise ClientGone(cancel.why)


def _gone(connection: socket.socket) -> str | None:
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        if not readable:
            return None
        peeked = connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return None
    except (OSError, ValueError):  # reset, or closed here (a descriptor of -1)
        return GONE
    return GONE if not peeked else None  # data: the client's next request, so still there
