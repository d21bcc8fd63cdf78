"""The compiled-module cache: compile python.wasm once per machine, then load it in about 1 ms.

A serialized module is native code that wasmtime maps and runs without checks, so the
cache lives in a folder only this user can write, never anywhere a guest can reach.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import platform
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import wasmtime

from .wasm_file import WasmFile

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: compiles are then not serialized
    fcntl = None  # type: ignore[assignment]

__all__ = ["cache_dir", "load_module", "write_private", "entry_path", "entry_lock", "progress"]

log = logging.getLogger("tooliscode")
ENV_CACHE = "TOOLISCODE_CACHE_DIR"
_TMP = ".tmp-"


def cache_dir() -> Path:
    """The private cache folder (created 0700 if missing)."""
    if os.environ.get(ENV_CACHE):
        base = Path(os.environ[ENV_CACHE])
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "tooliscode"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    return base


def _private(folder: Path) -> bool:
    st = folder.stat()
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        try:
            folder.chmod(0o700)
        except OSError:
            return False
    return True


def _cache_key(wasm: WasmFile, flags: str) -> str:
    try:
        wt_version = metadata.version("wasmtime")
    except metadata.PackageNotFoundError:  # pragma: no cover
        wt_version = "unknown"
    text = "|".join([wasm.sha256, wt_version, flags, platform.machine(), platform.system()])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _announce(message: str) -> None:
    log.warning(message)  # with no logging set up, Python's last-resort handler prints it


def entry_path(wasm: WasmFile, flags: str, prefix: str = "python") -> Path | None:
    """Where the compiled `wasm` is cached (None: no private cache folder to use)."""
    try:
        folder = cache_dir()
        return folder / f"{prefix}-{_cache_key(wasm, flags)}.cwasm" if _private(folder) else None
    except OSError as exc:
        log.warning("tooliscode: no usable cache folder (%s); compiling in memory", exc)
        return None


def _load_cached(engine: wasmtime.Engine, cached: Path | None, kind: Any) -> Any:
    if cached is None or not cached.is_file():
        return None
    try:
        return kind.deserialize_file(engine, str(cached))
    except wasmtime.WasmtimeError as exc:
        log.warning("tooliscode: dropping unusable cached module %s: %s", cached, exc)
        cached.unlink(missing_ok=True)
        return None


def load_module(engine: wasmtime.Engine, wasm: WasmFile, flags: str,
                announce: Callable[[str], None] = _announce, *, prefix: str = "python",
                expected: str = "a few seconds",
                transform: Callable[[bytes], bytes | None] | None = None,
                kind: Any = wasmtime.Module, what: str = "the Python runtime") -> Any:
    """Load the compiled module (or, with `kind` `wasmtime.component.Component`, component)
    from the cache, compiling (and caching) it on a miss.

    One process compiles a cache entry at a time; another that needs it meanwhile waits for
    it and loads it. `expected` says how long a compile usually takes, for the progress lines.
    `transform` rewrites the module's bytes before the compile (None back: leave them); name
    it in `flags`, since the cache entry holds what it made.
    """
    cached = entry_path(wasm, flags, prefix)
    module = _load_cached(engine, cached, kind)
    if module is not None:
        return module
    with entry_lock(cached, announce, f"compiling {wasm.path.name}"):
        module = _load_cached(engine, cached, kind)  # compiled by the process we waited for
        if module is not None:
            return module
        with progress(announce, f"compiling {what} {wasm.path.name}",
                      "once for this machine; later starts load it from the cache",
                      expected) as done:
            changed = transform(wasm.path.read_bytes()) if transform is not None else None
            module = kind(engine, changed) if changed is not None \
                else kind.from_file(engine, str(wasm.path))
            size = 0
            if cached is not None:
                data = module.serialize()
                size = len(data)
                write_private(cached, data)
            done(f"cached {size / 1e6:.0f} MB at {cached}" if cached is not None else "")
    return module


@contextlib.contextmanager
def entry_lock(target: Path | None, announce: Callable[[str], None],
               what: str) -> Iterator[None]:
    """Hold the lock file beside cache entry `target` (no-op without one). Leftovers of a
    writer that was killed are removed once the lock is ours."""
    if target is None or fcntl is None:
        yield
        return
    lock = target.with_name(target.name + ".lock")
    with open(lock, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            announce(f"tooliscode: another process is {what}; waiting for it to finish")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            for stale in target.parent.glob(f"{_TMP}{target.name}-*"):
                stale.unlink(missing_ok=True)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def progress(announce: Callable[[str], None], doing: str, why: str, expected: str,
             every_s: float = 15.0) -> Iterator[Callable[[str], None]]:
    """Announce what is `doing` now, then every `every_s` seconds with the time so far, and
    at the end with the total time and the note the body passes to the callback it gets."""
    started = time.perf_counter()
    finished = threading.Event()
    announce(f"tooliscode: {doing} ({why}); it takes {expected}")

    def tick() -> None:
        while not finished.wait(every_s):
            announce(f"tooliscode: still {doing}: {time.perf_counter() - started:.0f} s so far "
                     f"(it takes {expected})")

    threading.Thread(target=tick, name="tooliscode-progress", daemon=True).start()
    note: list[str] = []
    try:
        yield note.append
    finally:
        finished.set()
    elapsed = time.perf_counter() - started
    announce(f"tooliscode: {doing}: done in {elapsed:.1f} s"
             + (f"; {note[0]}" if note and note[0] else ""))


def write_private(target: Path, data: bytes) -> None:
    """Write `data` to `target` atomically, readable by this user only."""
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f"{_TMP}{target.name}-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        log.warning("tooliscode: could not write %s to the cache: %s", target.name, exc)
