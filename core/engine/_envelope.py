"""The snapshot envelope: named parts, compressed, with the runtime they belong to and a check.

    TICSNAP1 | header length (u32) | header (JSON) | compressed parts | stored parts | tag

The tag is an HMAC-SHA256 of everything before it (32 bytes) when a key is configured, else
a CRC-32 (4 bytes): without a key nobody can tell a forgery from the real thing anyway, so the
check only has to catch corruption, and CRC-32 does that at twice SHA-256's speed here (a
snapshot of a guest holding 47 MB is checked once on each side). Nothing inside is parsed before the tag checks out, and the parts
are plain length-prefixed bytes, never pickle or marshal, so a snapshot from elsewhere cannot
run code on the host.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import struct
import zlib
from collections.abc import Mapping, Sequence

from ..errors import SnapshotError

__all__ = ["ENV_KEY", "FORMAT", "SnapshotError", "pack", "unpack"]

MAGIC = b"TICSNAP1"
FORMAT = 2
"""2: the unkeyed tag became a CRC-32 (it was a SHA-256)."""
ENV_KEY = "TOOLISCODE_SNAPSHOT_KEY"
_TAG, _CRC = 32, struct.Struct("<I")
_U32 = struct.Struct("<I")
_PART = struct.Struct("<HQ")
_MAX_HEADER = 64 * 1024


def _key(key: bytes | str | None) -> bytes | None:
    if key is None:
        key = os.environ.get(ENV_KEY) or None
    return key.encode() if isinstance(key, str) else key


class _Crc:
    """zlib.crc32 with hashlib's update/digest, so both tags are made the same way."""

    def __init__(self) -> None:
        self.value = 0

    def update(self, data: bytes | memoryview) -> None:
        self.value = zlib.crc32(data, self.value)

    def digest(self) -> bytes:
        return _CRC.pack(self.value)


def _check(key: bytes | None) -> hmac.HMAC | _Crc:
    return _Crc() if key is None else hmac.new(key, digestmod=hashlib.sha256)


def _tag(body: bytes | memoryview, key: bytes | None) -> bytes:
    check = _check(key)
    check.update(body)
    return check.digest()


Data = bytes | memoryview | Sequence[bytes | memoryview]
"""A part's bytes, or its pieces in order (joined only into the snapshot itself)."""


def _pieces(data: Data) -> Sequence[bytes | memoryview]:
    return [data] if isinstance(data, (bytes, bytearray, memoryview)) else data


def pack(parts: Mapping[str, Data], *, runtime: str, meta: Mapping[str, object] | None = None,
         key: bytes | str | None = None, level: int = 1,
         stored: Mapping[str, Data] | None = None) -> bytes:
    """Seal `parts` for `runtime` (its fingerprint: a snapshot restores only there).

    `key` (or `TOOLISCODE_SNAPSHOT_KEY`) signs it; `level` is zlib's (1 is the fastest the
    standard library has). `stored` parts go in as they are: data that compresses slower than
    it travels (new pages of a guest's memory)."""
    secret = _key(key)
    squeeze = zlib.compressobj(level)
    packed = []
    for name, data in parts.items():
        raw, pieces = name.encode(), _pieces(data)
        packed.append(squeeze.compress(_PART.pack(len(raw), sum(map(len, pieces))) + raw))
        packed += [squeeze.compress(piece) for piece in pieces]
    packed.append(squeeze.flush())
    plain = {name: _pieces(data) for name, data in (stored or {}).items()}
    header = {"format": FORMAT, "runtime": runtime, "signed": secret is not None,
              "meta": dict(meta or {}), "id": os.urandom(8).hex()}
    # "id": no two snapshots are alike, so a store's version of one (`version_of`, from the
    # header and the tail) never matches another's, whatever the tag's strength.
    if plain:
        header["stored"] = [[name, sum(map(len, pieces))] for name, pieces in plain.items()]
        header["packed"] = sum(map(len, packed))
    head = json.dumps(header, sort_keys=True).encode()
    pieces = [MAGIC + _U32.pack(len(head)) + head, *packed,
              *(piece for group in plain.values() for piece in group)]
    check = _check(secret)
    for piece in pieces:
        check.update(piece)
    return b"".join([*pieces, check.digest()])


def unpack(blob: bytes, *, runtime: str, key: bytes | str | None = None
           ) -> tuple[dict[str, bytes | memoryview], dict[str, object]]:
    """The parts and metadata of a snapshot made for `runtime`; `SnapshotError` otherwise.
    Stored parts come back as memoryviews into `blob`."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise SnapshotError(f"a snapshot is bytes, not {type(blob).__name__}")
    view = memoryview(blob).cast("B")
    if not view[:len(MAGIC)] == MAGIC:
        raise SnapshotError("not a tooliscode snapshot (it does not start with the marker)")
    if len(view) < len(MAGIC) + 4 + _CRC.size:
        raise SnapshotError("the snapshot is cut short")
    size = _U32.unpack_from(view, len(MAGIC))[0]
    start = len(MAGIC) + 4
    if size > _MAX_HEADER or start + size + _CRC.size > len(view):
        raise SnapshotError("the snapshot is cut short or its header is damaged")
    try:
        header = json.loads(bytes(view[start:start + size]))
    except ValueError:
        raise SnapshotError("the snapshot's header is damaged") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise SnapshotError(f"a snapshot of another format ({header.get('format')!r}; "
                            f"this version reads {FORMAT})" if isinstance(header, dict)
                            else "the snapshot's header is damaged")
    secret = _key(key)
    if header.get("signed") and secret is None:
        raise SnapshotError("the snapshot is signed: configure the key it was made with "
                            f"(key= or {ENV_KEY})")
    if not header.get("signed") and secret is not None:
        raise SnapshotError("the snapshot is not signed, but a key is configured: refused")
    width = _TAG if secret is not None else _CRC.size
    if start + size + width > len(view):
        raise SnapshotError("the snapshot is cut short")
    body, tag = view[:-width], view[-width:]
    if not hmac.compare_digest(tag, _tag(body, secret)):
        raise SnapshotError("the snapshot failed its integrity check (corrupt, cut short, or "
                            "changed since it was made)" + (", or signed with another key"
                                                            if secret is not None else ""))
    if header.get("runtime") != runtime:
        raise SnapshotError(f"the snapshot was made on runtime {header.get('runtime')!r}; "
                            f"this session runs {runtime!r}")
    rest = body[start + size:]
    stored = _stored(header, rest)
    try:
        raw = zlib.decompress(rest[:header.get("packed", len(rest))])
    except (zlib.error, TypeError):
        raise SnapshotError("the snapshot's contents are damaged") from None
    parts: dict[str, bytes | memoryview] = {**_parts(raw), **stored}
    return parts, dict(header.get("meta") or {})


def _stored(header: dict, rest: memoryview) -> dict[str, memoryview]:
    """The parts kept as they are, after the compressed ones."""
    listed, at = header.get("stored") or [], header.get("packed", len(rest))
    out = {}
    try:
        for name, length in listed:
            if not isinstance(at, int) or not isinstance(length, int) or min(at, length) < 0:
                raise ValueError
            out[str(name)] = rest[at:at + length]
            at += length
    except (TypeError, ValueError):
        raise SnapshotError("the snapshot's header is damaged") from None
    if not isinstance(at, int) or at != len(rest):
        raise SnapshotError("the snapshot's contents are damaged")
    return out


def _parts(raw: bytes) -> dict[str, bytes]:
    parts: dict[str, bytes] = {}
    at = 0
    while at < len(raw):
        if at + _PART.size > len(raw):
            raise SnapshotError("the snapshot's contents are damaged")
        name_len, data_len = _PART.unpack_from(raw, at)
        at += _PART.size
        if at + name_len + data_len > len(raw):
            raise SnapshotError("the snapshot's contents are damaged")
        name = raw[at:at + name_len].decode("utf-8", "replace")
        at += name_len
        parts[name] = raw[at:at + data_len]
        at += data_len
    return parts
