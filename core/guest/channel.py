"""The guest's side of the frame protocol: JSON requests out, marshal answers back.

Requests are JSON because the host must parse them safely (they come from untrusted code);
answers are marshal because the host wrote them and `marshal.loads` is many times faster
than `json.loads` for large tool results.
"""

from __future__ import annotations

import json
import json.encoder
import marshal

from .convert import to_json_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

exchange: Callable[[bytes], Any] | None = None
"""Set at boot to the runtime's transport function."""


class ChannelError(RuntimeError):
    """The host could not be reached or answered nonsense."""


def _default(obj: Any) -> Any:
    return to_json_value(obj)


_encoder = json.JSONEncoder(default=_default, separators=(",", ":"))
# One C encoder made once: `json.dumps` builds a new one per call, which costs more than the
# encoding of a small request. No cycle markers: a cycle ends in RecursionError, handled below.
_fast = json.encoder.c_make_encoder(
    None, _default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True,
) if json.encoder.c_make_encoder is not None else None


def encode(message: dict[str, Any]) -> bytes:
    try:
        text = "".join(_fast(message, 0)) if _fast is not None else _encoder.encode(message)
    except (TypeError, ValueError, RecursionError):  # tuple keys, cycles: convert first
        text = _encoder.encode(to_json_value(message))
    return text.encode("ascii")


def request(message: dict[str, Any]) -> Any:
    """Send one request to the host and return its decoded answer."""
    return request_encoded(encode(message))


def request_encoded(frame: bytes) -> Any:
    """`request` for a message encoded in advance (when memory may be too short to encode)."""
    if exchange is None:
        raise ChannelError("the tooliscode channel is not connected")
    try:
        raw = exchange(frame)
    except OSError as exc:
        raise ChannelError(f"the host channel failed: {exc}") from None
    try:
        return marshal.loads(raw)
    except (EOFError, ValueError, TypeError) as exc:
        raise ChannelError(f"the host sent an unreadable answer: {exc}") from None
