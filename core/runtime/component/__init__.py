"""The default runtime: CPython 3.14 built by componentize-py as a pre-initialized WASI
component, with our wrappers between its libc and WASI (see `_runtime.py`)."""

from ._build import COMPONENTIZE_PY
from ._runtime import ComponentInstance, ComponentRuntime

__all__ = ["COMPONENTIZE_PY", "ComponentInstance", "ComponentRuntime"]
