"""What a new guest runs before anyone uses it: a short session of our own.

A guest pays for everything it does for the first time: importing the guest modules a cell
needs (tool calls, validation, tracebacks), and running interpreter code for the first time
(which, in a guest mapped from a start image, copies every page it writes). So a start image's
guest, and each pooled guest of a runtime without images, runs one setup and a few cells of
ours (a tool call, a value, an error) against scripted answers, then forgets that session: a
new guest starts where a booted one would, but with that code imported and warmed. Nothing of
it comes from a model.

A start image's script travels in the boot answer and its runtime plays it (see
`runtime/data/_image_warmup.py`); a pooled guest gets the commands in its "warm" command and
plays them itself (see `guest/rehearsal.py`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..tools import Tool, guest_spec

__all__ = ["rehearsal", "script"]

_CELLS = ("order = get_order(order_id=3)\nprint(order['total'])", "order", "1 / 0")
_EXPECTED = ("ZeroDivisionError",)
"""The errors the cells are meant to raise (to have formatted a traceback); any other
means the warm-up failed."""
_FORGET = '''
import gc, tooliscode_guest.main as _main, tooliscode_guest.heap as _heap
_main.forget_session()
_heap.take_free_chunks()
gc.freeze()
del gc, _main, _heap
'''
"""A new guest's state, as after its boot (see `guest/rehearsal.py`); what is already
there is never collected again, so its pages stay shared, and guests allocate from the top
of the heap (`guest/heap.py`)."""


def get_order(order_id: int) -> dict:
    """Look up one order."""
    return {"id": order_id, "total": order_id * 1.5}


@lru_cache(maxsize=1)
def rehearsal() -> dict[str, Any]:
    """The warm-up session's commands, the answer every call they make gets, and the
    errors its cells are meant to raise."""
    tool = Tool.from_function(get_order)
    return {"answer": {"ok": True, "value": get_order(3)}, "expected": list(_EXPECTED),
            "commands": [{"op": "setup", "tools": [guest_spec(tool)], "limits": {}},
                         *({"op": "cell", "code": code} for code in _CELLS)]}


def script(serve: str, serve_answered: str = "") -> dict[str, Any]:
    """The warm-up session for a start image: `serve` runs one turn of the command loop
    (`serve_answered` one given its first answer), and `forget` is run after it."""
    return {"serve": serve, "serve_answered": serve_answered, "forget": _FORGET, **rehearsal()}
