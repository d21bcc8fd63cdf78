"""Running code right after a module's first import, without importing the module early."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["AfterImport", "Unavailable"]


class AfterImport:
    """A `sys.meta_path` finder that calls `then(module)` as soon as module `name` has been
    imported (by the cell's code or by a library), then steps aside. It lets a cold guest
    wait to pay for a module (asyncio, matplotlib) until the code asks for it."""

    def __init__(self, name: str, then: Callable[[Any], None],
                 before: Callable[[], None] | None = None):
        self.name = name
        self.then = then
        self.before = before
        """Called once the module is found, before it runs."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenCall(spec.loader, self.then)
            if self.before is not None:
                self.before()
        return spec


class _ThenCall:
    """Wraps the module's loader (which may be shared by the whole stdlib, e.g. a
    zipimporter) for this one import."""

    def __init__(self, loader: Any, then: Callable[[Any], None]):
        self._loader = loader
        self._then = then

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        self._then(module)


class Unavailable:
    """A `sys.meta_path` finder refusing modules a build carries that cannot work here (there
    are no processes), as a build without them would: the error then says why. ctypes is
    left to the build (pandas imports it; it loads no library)."""

    names = frozenset(("multiprocessing", "_multiprocessing"))

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

    @classmethod
    def install(cls) -> None:
        if not any(isinstance(f, cls) for f in sys.meta_path):
            sys.meta_path.insert(0, cls())
