"""The guest's side of the frame protocol: JSON requests out, marshal answers back.

Requests are JSON because the host must parse them safely (they come from untrusted code);
answers are marshal because the host wrote them and `marshal.loads` is many times faster
than `json.loads` for large tool results.
"""

from __future__ import annotations

import _json  # the C encoder alone: `json` would compile its decoder's regexes at start-up
import marshal

from .convert import to_json_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

exchange: Callable[[bytes], Any] | None = None
"""Set at boot to the runtime's transport function."""
before_request: Callable[[], None] | None = None
"""Called before each request while a cell streams its output: what it printed goes first
(see `stream.py`)."""


class ChannelError(RuntimeError):
    """The host could not be reached or answered nonsense."""


def _default(obj: Any) -> Any:
    return to_json_value(obj)


# One C encoder made once (`json.dumps` builds a new one per call, which costs more than the
# encoding of a small request). No cycle markers: a cycle ends in RecursionError, handled below.
_encode = _json.make_encoder(None, _default, _json.encode_basestring_ascii, None, ":", ",",
                             False, False, True)


def encode(message: dict[str, Any]) -> bytes:
    try:
        text = "".join(_encode(message, 0))
    except (TypeError, ValueError, RecursionError):  # tuple keys, cycles: convert first
        text = "".join(_encode(to_json_value(message), 0))
    return text.encode("ascii")


def call_prefix(name: str) -> str:
    """The start of a "call" request for tool `name`, made once per tool (see `call`)."""
    return '{"op":"call","name":' + _json.encode_basestring_ascii(name) + ',"args":'


def call(prefix: str, arguments: dict[str, Any]) -> Any:
    """A "call" request from its prefix (only the arguments are encoded per call), sent, and
    its answer decoded."""
    try:
        text = "".join(_encode(arguments, 0))
    except (TypeError, ValueError, RecursionError):  # tuple keys, cycles: convert first
        text = "".join(_encode(to_json_value(arguments), 0))
    return request_encoded((prefix + text + "}").encode("ascii"))


def request(message: dict[str, Any]) -> Any:
    """Send one request to the host and return its decoded answer."""
    return request_encoded(encode(message))


def request_encoded(frame: bytes) -> Any:
    """`request` for a message encoded in advance (when memory may be too short to encode)."""
    if exchange is None:
        raise ChannelError("the tooliscode channel is not connected")
    if before_request is not None:
        before_request()
    try:
        raw = exchange(frame)
    except OSError as exc:
        raise ChannelError(f"the host channel failed: {exc}") from None
    return decode(raw)


def decode(raw: bytes) -> Any:
    """An answer of the host's, as it sent it."""
    try:
        return marshal.loads(raw)
    except (EOFError, ValueError, TypeError) as exc:
        raise ChannelError(f"the host sent an unreadable answer: {exc}") from None


OUTPUT_MARK = 1
"""First byte of an output frame: then b"o" (stdout) or b"e" (stderr), then the text as
UTF-8. Printed text crosses as it is, where JSON would escape it character by character (in
the guest, several times what the crossing costs)."""
_OUTPUT = {"stdout": bytes((OUTPUT_MARK, 0x6F)), "stderr": bytes((OUTPUT_MARK, 0x65))}


def send_output(stream: str, text: str) -> Any:
    """Hand the host a piece of the cell's `stream` ("stdout" or "stderr")."""
    return request_encoded(_OUTPUT[stream] + text.encode("utf-8", "surrogatepass"))


def round_trip() -> Any:
    """One empty request the host answers without dispatching it: the bare cost of crossing
    into the host and back, which the benchmarks set tool calls against."""
    return request_encoded(b'{"op":"empty"}')
