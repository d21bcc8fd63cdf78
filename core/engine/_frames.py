"""The host's side of the frames a guest sends: cheap parsing, and the empty round trip."""

from __future__ import annotations

import json
import json.scanner
import marshal
from typing import Any

from ..guest import OUTPUT_MARK

__all__ = ["EMPTY_ANSWER", "EMPTY_FRAME", "parse_frame"]

EMPTY_FRAME = b'{"op":"empty"}'
"""A request the host answers at once, dispatching nothing: guest->host->guest, no payload."""
EMPTY_ANSWER = marshal.dumps({"ok": True})
_scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
_OUTPUT = bytes((OUTPUT_MARK,))
"""An output frame (see the guest's `channel.send_output`): the mark, b"o" or b"e", UTF-8."""
_STREAMS = {b"o": "stdout", b"e": "stderr"}


def parse_frame(frame: bytes) -> Any:
    """One JSON document, with the C scanner directly: `json.loads` spends as long again
    sniffing the encoding and matching whitespace around a small request. An output frame
    is read as the "out" request it stands for."""
    if frame[:1] == _OUTPUT:
        return {"op": "out", "parts": [[_STREAMS.get(frame[1:2]),
                                          frame[2:].decode("utf-8", "surrogatepass")]]}
    text = frame.decode("utf-8")
    if text[:1].isspace():
        text = text.lstrip()
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("a request must be one JSON document") from None
    if end != len(text) and text[end:].strip():
        raise ValueError(f"extra data after the request at {end}")
    return value
