"""The host's side of the component's imports, for the guest whose turn is running: its
channel (`host-call`), the interposer's questions (`guard`) and its console (`console`)."""

from __future__ import annotations

import marshal
from typing import TYPE_CHECKING

from .._wasmtime.host_functions import tls
from . import _in_memory

if TYPE_CHECKING:
    from ._runtime import ComponentInstance

__all__ = ["BIG_ANSWER", "answer", "console", "verdict"]


def _current() -> ComponentInstance | None:
    return getattr(tls, "instance", None)  # set around every call into a guest


_MORE = b'{"op":"more"}'
_IN_MEMORY_MARKS = (_in_memory.AT, _in_memory.THERE)
BIG_ANSWER = 1 << 20
"""An answer longer than this is announced first, and sent when the guest asks for it (see
the app module's `exchange`): the guest checks it has room before it is copied in."""


def answer(request: bytes) -> bytes:
    inst = _current()
    if inst is None or inst.handler is None:
        return marshal.dumps({"ok": False, "kind": "protocol", "error": "no host is listening"})
    pending, inst.pending = inst.pending, None
    if request == _MORE:
        return pending or marshal.dumps({"ok": False, "kind": "protocol",
                                         "error": "no answer is waiting"})
    if request[:1] in _IN_MEMORY_MARKS:
        read, control = inst.in_memory.request(request)
        if read is None:
            return control or _in_memory.TEXT
        request = read
    reply = inst.handler(request)
    inst.answered(reply)
    inst.after_host_call()
    if len(reply) <= BIG_ANSWER:
        return reply
    inst.pending = reply
    return b"\0" + str(len(reply) if reply.isascii() else len(reply.decode("latin-1")
                                                                .encode("utf-8"))).encode()


def verdict(op: int, handle: int, value: int) -> int:
    inst = _current()
    return inst.guard(op, handle, value) if inst is not None else -1


def console(fd: int, data: bytes) -> None:
    inst = _current()
    if inst is not None:
        inst.write_console(fd, data)
