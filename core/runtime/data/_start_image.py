"""The `data` runtime's start image: a guest that booted our guest code and imported numpy,
pandas, matplotlib's pyplot and asyncio, saved once so every new guest starts from it with
pandas and charts ready.

The image is made by a guest that runs nothing but our boot code, those imports and the
engine's scripted warm-up session (see `_image_warmup.py`), so a new guest's first cell finds our
own code imported and warm: no model-written code ever ran in it. Beside it lies where its
random generators' states are, so each new guest gets new ones (see `_image_seeds.py`).
It is keyed by the compiled module, the boot code and what
the host answered at boot (the guest modules), so a new release of either makes a new image.
Until it exists, guests boot from the bare snapshot and one thread builds it, under the same
kind of lock as a compile, so two processes never build the same image.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import wasmtime

from ..._temp_folders import new_folder
from .._wasmtime.compile_cache import cache_dir, entry_lock, progress, write_private
from .._wasmtime.immortal import IMMORTALIZE, Immortalizer
from ..base import GUEST_DIR, GuestSpec, GuestTrap
from . import _image_ballast as imageballast
from ._image_seeds import MARK_SOURCE, locate_and_save
from ._image_warmup import warm
from ._memory_image import SUPPORTED, MemoryImage, capture

if TYPE_CHECKING:
    from ._runtime import DataInstance, DataRuntime

__all__ = ["Images", "PRELOAD"]

log = logging.getLogger("tooliscode")

PRELOAD = ("numpy", "pandas", "matplotlib.pyplot")
"""What a new data guest has imported already: pandas, and pyplot with its font list built
(seconds in every session otherwise)."""
_BUILD_MEMORY = 1 << 30
_BUILD_TIMEOUT_S = 300.0
_BOOT_REQUEST = b'{"op":"boot"}'


_MPL_CONFIG = f"{GUEST_DIR}/.tooliscode/matplotlib"
"""Where a Session lends matplotlib its config folder (engine/_session.py): the image's
matplotlib keeps the folder it saw at import."""
_MPL_SETUP = ("import os\nos.environ['MPLCONFIGDIR'] = {folder!r}\n")
_MPL_DONE = ("import matplotlib\nmatplotlib.get_backend()  # chosen now (Agg), not at a "
             "session's first figure\ndel os.environ['MPLCONFIGDIR'], os, matplotlib\n")


def _preload_source(modules: tuple[str, ...]) -> str:
    # matplotlib builds its font list at import: seconds, in every session, unless the image
    # carries it (the list's cache file is written into the build's own folder and dropped)
    mpl = any(m.partition(".")[0] == "matplotlib" for m in modules)
    return ((_MPL_SETUP.format(folder=_MPL_CONFIG) if mpl else "") +
            f"import gc, importlib\nfor _m in {list(modules)!r}:\n"
            "    importlib.import_module(_m)\n" + (_MPL_DONE if mpl else "") +
            "import asyncio  # the guest's import hook installs its event loop on it\n"
            "del _m, asyncio, importlib\ngc.collect()\n"
            # what is already there is never collected: a guest's collections then leave the
            # image's pages alone (shared, and not faulted in)
            "gc.freeze()\ndel gc\n")


def _drop_cached(path: Path) -> None:
    """Written in one go, the file sits in the page cache in large folios, and every guest
    mapping it then maps (and counts in its RSS) each whole folio it touches: up to 2 MiB for
    a word read. Dropped, its pages come back from disk in small pieces as guests read them."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)  # only written-back pages can be dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except (OSError, AttributeError):  # no posix_fadvise: an RSS figure, not a fault
        pass
    finally:
        os.close(fd)


class Images:
    """The image new guests of one runtime are mapped from, built in the background."""

    def __init__(self, runtime: DataRuntime, preload: tuple[str, ...]):
        self._rt = runtime
        self.preload = preload
        self._lock = threading.Lock()
        self._images: dict[str, MemoryImage] = {}
        self._building: dict[str, threading.Event] = {}
        self._keys: tuple[str, bytes, str] | None = None

    def start(self, instance: DataInstance, spec: GuestSpec) -> None:
        """Map the image over the fresh `instance` if there is one that fits its limit;
        otherwise make sure one is being built (this instance then boots as usual)."""
        if not SUPPORTED or not self.preload or spec.boot_reply is None or spec.extra_env:
            return  # an image remembers its environment: only guests with none use it
        image = self._image(spec)
        if image is None or image.size > spec.memory_bytes:
            return
        try:
            instance.map_image(image)
        except (OSError, wasmtime.WasmtimeError) as exc:
            log.warning("tooliscode: starting from the memory image failed (%s); booting", exc)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no image is being built; True when one is ready (for warm-up, tests)."""
        with self._lock:
            events = list(self._building.values())
        for event in events:
            event.wait(timeout)
        with self._lock:
            return bool(self._images)

    def _key(self, spec: GuestSpec) -> str:
        keys = self._keys
        if keys is not None and keys[0] == spec.boot_source and keys[1] == spec.boot_reply:
            return keys[2]
        digest = hashlib.sha256()
        for part in (self._rt.wasm.sha256, metadata.version("wasmtime"),
                     _preload_source(self.preload), MARK_SOURCE, self._rt.layout,
                     spec.boot_source, imageballast.SOURCE, IMMORTALIZE):
            digest.update(part.encode() + b"\0")
        digest.update(spec.boot_reply or b"")
        key = digest.hexdigest()[:32]
        self._keys = (spec.boot_source, spec.boot_reply or b"", key)
        return key

    def _image(self, spec: GuestSpec) -> MemoryImage | None:
        key = self._key(spec)
        with self._lock:
            image = self._images.get(key)
            if image is not None or key in self._building:
                return image
            path = _path(key)
            if path.is_file():
                try:
                    image = self._images[key] = MemoryImage(path)
                    return image
                except (OSError, ValueError) as exc:
                    log.warning("tooliscode: unusable memory image %s: %s", path, exc)
            done = self._building[key] = threading.Event()
        old = threading.stack_size(self._rt.thread_stack or 0)
        try:
            threading.Thread(target=self._build, args=(key, path, spec, done),
                             name="tooliscode-image", daemon=True).start()
        finally:
            threading.stack_size(old)
        return None

    def _build(self, key: str, path: Path, spec: GuestSpec, done: threading.Event) -> None:
        image = None
        try:
            with entry_lock(path, log.info, "preparing the data runtime's memory image"):
                if not path.is_file():
                    with progress(log.info, "preparing a memory image with "
                                  f"{', '.join(self.preload)} imported",
                                  "once, in the background", "about 5-10 s") as note:
                        write_private(path, self._boot_and_import(spec))
                        _drop_cached(path)
                        note(f"{path.stat().st_size / 1e6:.0f} MB at {path}")
            image = MemoryImage(path)
        except (GuestTrap, OSError, ValueError, RuntimeError, wasmtime.WasmtimeError) as exc:
            log.warning("tooliscode: could not prepare the memory image: %s", exc)
        finally:
            with self._lock:  # a failed build stays marked: it is not retried in this process
                if image is not None:
                    self._images[key] = image
                    del self._building[key]
            done.set()

    def _boot_and_import(self, spec: GuestSpec) -> bytes:
        from ._runtime import DataInstance

        folder = new_folder("image")  # removed by a later start if this process dies
        instance = None
        try:
            with self._rt.making():  # the runtime is not freed under it
                instance = DataInstance(self._rt, GuestSpec(
                    folder, _BUILD_MEMORY, spec.boot_source, boot_reply=spec.boot_reply))
                self._rt._live.add(instance)
            reply = spec.boot_reply or b""
            instance.handler = lambda frame: reply if bytes(frame) == _BOOT_REQUEST else b""
            said: list[bytes] = []
            instance.output = lambda stream, data: said.append(data)
            try:
                instance.arm(_BUILD_TIMEOUT_S)
                instance.run()
                instance.arm(_BUILD_TIMEOUT_S)
                instance.turn(_preload_source(self.preload))
                instance.arm(_BUILD_TIMEOUT_S)
                warm(instance, spec.boot_reply)
                booting, instance.handler = instance.handler, Immortalizer(instance.memory_span)
                instance.turn(IMMORTALIZE)  # before the holes are filled: it leaves some
                instance.handler = booting
                instance.turn(imageballast.SOURCE)  # last: a session's objects land together
                said.clear()
                instance.turn(MARK_SOURCE)
            except GuestTrap as trap:
                tail = b"".join(said)[-2000:].decode("utf-8", "replace")
                raise GuestTrap(trap.reason, f"{trap.message}\n{tail}") from None
            memory = capture(instance._memory_handle, instance._store)
            locate_and_save(memory, b"".join(said), _path(self._key(spec)))  # before the image
            return memory
        finally:
            if instance is not None:
                instance.close()
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            images, self._images = list(self._images.values()), {}
        for image in images:
            image.close()


def _path(key: str) -> Path:
    return cache_dir() / f"wasi-python-image-{key}.mem"
