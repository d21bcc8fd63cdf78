"""Playing the engine's warm-up session in a start image's guest (see `engine/_warmup.py`).

The script comes in the boot answer: the commands to give the guest one by one, the answer
to give to any other request (its tool calls), the turn that serves commands and the turn
that forgets the session afterwards.
"""

from __future__ import annotations

import json
import marshal
from typing import TYPE_CHECKING, Any

from ..base import GuestTrap

if TYPE_CHECKING:
    from ._runtime import DataInstance

__all__ = ["warm"]


class _Scripted:
    def __init__(self, script: dict[str, Any]):
        self._commands = list(script["commands"])
        self._answer = marshal.dumps(script["answer"])
        self._expected = script["expected"]
        self.failed: list[Any] = []

    def __call__(self, frame: bytes) -> bytes:
        msg = json.loads(bytes(frame))
        if msg.get("op") not in ("ready", "done"):
            return self._answer
        result = msg.get("result")
        if isinstance(result, dict) and not result.get("ok") \
                and result.get("error_type") not in self._expected:
            self.failed.append(result)
        return marshal.dumps(self._commands.pop(0) if self._commands else {"op": "yield"})


def warm(instance: DataInstance, boot_reply: bytes | None) -> None:
    """Run the warm-up the boot answer carries, if any, in the booted `instance`."""
    script = marshal.loads(boot_reply).get("warm") if boot_reply else None
    if not script:
        return
    handler = instance.handler
    instance.handler = played = _Scripted(script)
    try:
        instance.turn(script["serve"])
    finally:
        instance.handler = handler
    if played.failed:
        raise GuestTrap("crash", f"the warm-up session failed: {played.failed[0]}")
    instance.turn(script["forget"])
