"""What a start image's guest runs before it is saved: a short session of our own.

A guest mapped from an image pays for everything it does for the first time: importing
the guest modules a cell needs (tool calls, validation, tracebacks), and running interpreter
code for the first time, which copies every page it writes. The image's guest therefore
runs one setup and a few cells of ours (a tool call, a value, an error) against scripted
answers, then forgets that session: a new guest starts where a booted one would, but with
that code imported and warmed. Nothing of it comes from a model.

The script travels in the boot answer; the runtime plays it (see `runtime/data/_image_warmup.py`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..tools import Tool, guest_spec

__all__ = ["script"]

_CELLS = ("order = get_order(order_id=3)\nprint(order['total'])", "order", "1 / 0")
_FORGET = '''
import gc, linecache, tooliscode_guest.errors as _errors, tooliscode_guest.main as _main
_main._loop.guest = _main.Guest()
_errors.sources.clear()
linecache.clearcache()  # the script's cells are not the session's
del _errors, _main, linecache
gc.collect()
gc.freeze()
del gc
'''
"""A new guest's state, as after its boot; what is already there is never collected again
(its pages stay shared)."""


def get_order(order_id: int) -> dict:
    """Look up one order."""
    return {"id": order_id, "total": order_id * 1.5}


@lru_cache(maxsize=1)
def script(serve: str) -> dict[str, Any]:
    """The warm-up session: `serve` runs one turn of the command loop."""
    tool = Tool.from_function(get_order)
    return {"serve": serve, "forget": _FORGET, "answer": {"ok": True, "value": get_order(3)},
            "commands": [{"op": "setup", "tools": [guest_spec(tool)], "limits": {}},
                         *({"op": "cell", "code": code} for code in _CELLS)]}
