"""Loading what can be loaded from a saved state one of whose objects cannot be made again.

A state is one pickle, so that objects shared between names stay shared; but then one object
that pickled and does not unpickle (a `__reduce__` that asks for arguments its class no
longer takes, a class gone from its module, a tool the new session lacks) would fail the
whole load, and a rollback would lose every variable for it. Only then is the state read a
second time, by Python's own unpickler with the steps that make objects guarded: an object
that cannot be made is a `_Broken` in its place, and each name whose value reaches one is
left out, with the reason, while every other name comes back.
"""

from __future__ import annotations

import gc
import io
import pickle
import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["load"]

_LIMIT = 2_000_000
"""Objects looked through per name for a broken one; past it the name counts as broken."""


class _Broken:
    """Stands where an object could not be made; takes whatever the pickle then gives it."""

    def __init__(self, error: BaseException):
        self.error = error

    def __setstate__(self, state: Any) -> None: ...

    def append(self, item: Any) -> None: ...

    def extend(self, items: Any) -> None: ...

    def add(self, item: Any) -> None: ...

    def __setitem__(self, key: Any, value: Any) -> None: ...


def _broken(exc: BaseException) -> _Broken:
    if isinstance(exc, MemoryError):  # not the object's fault: the guest must see it
        raise exc
    return _Broken(exc)


class _Salvaging(pickle._Unpickler):  # type: ignore[name-defined, misc]
    """Python's unpickler, with each step that makes an object (or finds a class, or a tool)
    turned into a `_Broken` when it fails."""

    dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def __init__(self, file: Any, helpers: dict[str, Any]):
        super().__init__(file)
        self._helpers = helpers
        self.marked: dict[int, BaseException] = {}
        """Objects made whose state could not be set, by id."""
        self._kept: list[Any] = []
        """Those objects, held so that no other takes their id while `marked` is read."""

    def persistent_load(self, pid: Any) -> Any:
        if pid in self._helpers:
            return self._helpers[pid]
        return _broken(pickle.UnpicklingError(f"the new session has no {pid!r}"))

    def find_class(self, module: str, name: str) -> Any:
        try:
            return super().find_class(module, name)
        except Exception as exc:  # noqa: BLE001 - called or built later: broken there too
            return _broken(exc)

    def load_reduce(self) -> None:
        stack = self.stack
        args = stack.pop()
        if type(stack[-1]) is _Broken:  # its own error is the one to tell
            return
        try:
            stack[-1] = stack[-1](*args)
        except Exception as exc:  # noqa: BLE001
            stack[-1] = _broken(exc)

    dispatch[pickle.REDUCE[0]] = load_reduce

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new(cls, args, {}))

    dispatch[pickle.NEWOBJ[0]] = load_newobj

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new(cls, args, kwargs))

    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

    def load_build(self) -> None:
        try:
            super().load_build()  # the state is taken off first; the object stays
        except Exception as exc:  # noqa: BLE001
            _broken(exc)
            self.marked[id(self.stack[-1])] = exc
            self._kept.append(self.stack[-1])

    dispatch[pickle.BUILD[0]] = load_build

    @staticmethod
    def _new(cls: Any, args: Any, kwargs: Any) -> Any:
        if type(cls) is _Broken:
            return cls
        try:
            return cls.__new__(cls, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            return _broken(exc)


def load(blob: bytes, helpers: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The names of the pickled dict `blob` that could be made again, and the others with
    the reason."""
    reader = _Salvaging(io.BytesIO(blob), helpers)
    values = reader.load()
    if not isinstance(values, dict):
        raise pickle.UnpicklingError("a saved state is a dict of names")
    failed: dict[str, str] = {}
    for name, value in list(values.items()):
        error = _broken_in(value, reader.marked)
        if error is not None:
            failed[name] = (f"could not be loaded ({type(error).__name__}: "
                            f"{str(error)[:80]})")
            del values[name]
    return values, failed


def _broken_in(value: Any, marked: dict[int, BaseException]) -> BaseException | None:
    """The error behind a broken object `value` reaches, if any (modules and classes are
    not looked into: what a name holds is its data)."""
    seen: set[int] = set()
    level = [value]
    while level:
        step = []
        for obj in level:
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if type(obj) is _Broken:
                return obj.error
            if id(obj) in marked:
                return marked[id(obj)]
            if not isinstance(obj, (type, types.ModuleType)):
                step.append(obj)
        if len(seen) > _LIMIT:
            return RuntimeError("too many objects to look through")
        level = gc.get_referents(*step) if step else []
    return None
