"""The compiled-module cache: compile python.wasm once per machine, then load it in about 1 ms.

A serialized module is native code that wasmtime maps and runs without checks, so the
cache lives in a folder only this user can write, never anywhere a guest can reach.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import stat
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import wasmtime

from .locate import WasmFile

__all__ = ["cache_dir", "load_module", "write_private"]

log = logging.getLogger("tooliscode")
ENV_CACHE = "TOOLISCODE_CACHE_DIR"


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


def load_module(engine: wasmtime.Engine, wasm: WasmFile, flags: str,
                announce: Callable[[str], None] = _announce) -> wasmtime.Module:
    """Load the compiled module from the cache, compiling (and caching) it on a miss."""
    try:
        folder = cache_dir()
        cached = folder / f"python-{_cache_key(wasm, flags)}.cwasm" if _private(folder) else None
    except OSError as exc:
        log.warning("tooliscode: no usable cache folder (%s); compiling in memory", exc)
        cached = None
    if cached is not None and cached.is_file():
        try:
            return wasmtime.Module.deserialize_file(engine, str(cached))
        except wasmtime.WasmtimeError as exc:
            log.warning("tooliscode: dropping unusable cached module %s: %s", cached, exc)
            cached.unlink(missing_ok=True)
    announce(f"tooliscode: compiling the Python runtime ({wasm.path.name}) for this machine; "
             "this takes a few seconds once, later starts load it from the cache")
    started = time.perf_counter()
    module = wasmtime.Module.from_file(engine, str(wasm.path))
    log.info("tooliscode: compiled in %.1f s", time.perf_counter() - started)
    if cached is not None:
        write_private(cached, module.serialize())
    return module


def write_private(target: Path, data: bytes) -> None:
    """Write `data` to `target` atomically, readable by this user only."""
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except OSError as exc:
        log.warning("tooliscode: could not write %s to the cache: %s", target.name, exc)
