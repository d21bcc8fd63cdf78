"""Runtimes: what starts a guest interpreter and carries its frames to the host."""

from __future__ import annotations

import threading

from .base import GUEST_DIR, GuestSpec, GuestTrap, Instance, Runtime
from .locate import PACKAGED_SHA256, WasmFile, locate_python_wasm

__all__ = [
    "GUEST_DIR", "GuestSpec", "GuestTrap", "Instance", "Runtime", "WasmFile",
    "PACKAGED_SHA256", "locate_python_wasm", "default_runtime", "close_default_runtime",
    "WasmtimeRuntime",
]

_default: Runtime | None = None
_lock = threading.Lock()


def default_runtime() -> Runtime:
    """The process-wide runtime: python.wasm found by the usual order, under wasmtime."""
    global _default
    with _lock:
        if _default is None:
            from .wasmtime_wasi import WasmtimeRuntime

            _default = WasmtimeRuntime()
        return _default


def close_default_runtime() -> None:
    """Release the process-wide runtime (at exit, after every session is closed)."""
    global _default
    with _lock:
        runtime, _default = _default, None
    if runtime is not None:
        runtime.close()


def __getattr__(name: str):  # lazy: importing tooliscode must not load wasmtime's engine
    if name == "WasmtimeRuntime":
        from .wasmtime_wasi import WasmtimeRuntime

        return WasmtimeRuntime
    raise AttributeError(name)
