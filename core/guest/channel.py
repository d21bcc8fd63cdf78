"""The guest's side of the frame protocol: JSON requests out, marshal answers back.

Requests are JSON because the host must parse them safely (they come from untrusted code);
answers are marshal because the host wrote them and `marshal.loads` is many times faster
than `json.loads` for large tool results.
"""

from __future__ import annotations

import json
import marshal
from typing import Any, Callable

from .convert import to_json_value

exchange: Callable[[bytes], Any] | None = None
"""Set at boot to the runtime's transport function."""


class ChannelError(RuntimeError):
    """The host could not be reached or answered nonsense."""


def _default(obj: Any) -> Any:
    return to_json_value(obj)


_encoder = json.JSONEncoder(default=_default, separators=(",", ":"))


def encode(message: dict[str, Any]) -> bytes:
    try:
        text = _encoder.encode(message)
    except (TypeError, ValueError):  # e.g. tuple keys, or a cycle: convert everything first
        text = _encoder.encode(to_json_value(message))
    return text.encode("ascii")


def request(message: dict[str, Any]) -> Any:
    """Send one request to the host and return its decoded answer."""
    if exchange is None:
        raise ChannelError("the tooliscode channel is not connected")
    try:
        raw = exchange(encode(message))
    except OSError as exc:
        raise ChannelError(f"the host channel failed: {exc}") from None
    try:
        return marshal.loads(raw)
    except (EOFError, ValueError, TypeError) as exc:
        raise ChannelError(f"the host sent an unreadable answer: {exc}") from None
