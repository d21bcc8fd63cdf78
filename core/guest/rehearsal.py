"""A short session of our own, played in a new guest before anyone uses it.

A guest pays for what it does the first time: importing the guest modules a cell needs
(tool calls, validation, tracebacks) and running that code once. A pooled guest plays the
engine's warm-up script (a setup and a few cells, see `engine/_warmup.py`) against scripted
answers, then forgets it (`main.forget_session`), so the first session to take it starts
warm. The data runtime's start image plays the same script from the host
(`runtime/data/_image_warmup.py`) and forgets it the same way.
"""

from __future__ import annotations

import gc
import linecache
import marshal

from . import channel, errors

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["forget", "rehearse", "rehearse_served"]


def rehearse(handle: Callable[[dict[str, Any]], dict[str, Any]], script: dict[str, Any]) -> None:
    """Give `handle` the script's commands, every request they make answered with the
    script's answer; a cell that fails otherwise than the script expects raises."""
    answer = marshal.dumps(script["answer"])
    exchange, channel.exchange = channel.exchange, lambda _frame: answer
    try:
        for command in script["commands"]:
            result = handle(command)
            if not result.get("ok") and result.get("error_type") not in script["expected"]:
                raise RuntimeError(f"the warm-up session failed: {result}")
    finally:
        channel.exchange = exchange


def rehearse_served(serve: Callable[[], None], script: dict[str, Any], rounds: int = 2) -> None:
    """`rehearse` through the command loop itself (`serve`, given the commands as the host
    would: each cell asking for its point, and a checkpoint after it), `rounds` times: the
    loop's own code and the channel's run as they will in a guest, and are warm there."""
    answer, done = marshal.dumps(script["answer"]), marshal.dumps({"ok": True})
    commands: list[dict[str, Any]] = []
    for _ in range(rounds):
        for command in script["commands"]:
            if command.get("op") == "cell":
                commands += [{**command, "point": True}, {"op": "checkpoint", "limit": 1 << 20}]
            else:
                commands.append(command)
    commands.append({"op": "yield"})
    queued = iter(commands)

    def exchange(frame: bytes) -> bytes:
        if frame.startswith((b'{"op":"ready"', b'{"op":"done"')):
            return marshal.dumps(next(queued))
        return done if frame[:1] == b"\0" else answer

    saved, channel.exchange = channel.exchange, exchange
    try:
        serve()
    finally:
        channel.exchange = saved


def forget() -> None:
    """Drop what the played session left (the caller makes its guest state new): its cells'
    sources, and the garbage."""
    errors.sources.clear()
    linecache.clearcache()
    gc.collect()
