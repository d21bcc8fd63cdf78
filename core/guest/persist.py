"""A session's variables as bytes and back, for interpreters that cannot be copied whole.

Values pickle as usual. What the cells defined (functions, classes, in `__main__`) goes by
value: code, defaults, closures and class bodies, since no module holds them in a new guest.
Modules go by name and are imported again. The tools are the new session's own. What cannot
come along (open files, generators, running tasks, locks) is named, with its type, so the model
can make it again.
"""

from __future__ import annotations

import importlib
import io
import itertools
import marshal
import pickle
import sys
import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["dump", "load", "lost_files"]

_FORMAT = 3
"""3: each plain value dumped alone, a number or a string by marshal, data made of lists,
dicts and the like by the C pickler with no hooks (`_plain`). Format 2 marshalled them all,
and marshal writes any object with a buffer (a bytearray, an array.array) as bytes: they came
back changed."""
_READS = (1, 2, 3)
_globals: dict[str, Any] = {}
"""The namespace functions are rebuilt into while `load` runs."""


def _namespace(own: dict[str, Any] | None) -> dict[str, Any]:
    """The cells' namespace, or the few globals a function made elsewhere needs (a
    namedtuple's `__new__`, made by `eval` in a namespace of its own)."""
    return _globals if own is None else {"__builtins__": __builtins__, **own}


def _new_function(code: bytes, name: str, qualname: str,
                  own: dict[str, Any] | None = None) -> types.FunctionType:
    fn = types.FunctionType(marshal.loads(code), _namespace(own), name)
    fn.__qualname__ = qualname
    return fn


def _new_function_with_closure(code: bytes, name: str, qualname: str, own: dict[str, Any] | None,
                               closure: tuple[Any, ...]) -> types.FunctionType:
    fn = types.FunctionType(marshal.loads(code), _namespace(own), name, None,
                            tuple(types.CellType(v) for v in closure))
    fn.__qualname__ = qualname
    return fn


def _new_class(meta: type, name: str, bases: tuple[type, ...]) -> type:
    return meta(name, bases, {"__module__": "__main__"})


def _set_class(cls: type, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        try:
            setattr(cls, key, value)
        except (AttributeError, TypeError):
            pass


_SKIPPED_ATTRS = {"__dict__", "__weakref__", "__module__"}


class _Pickler(pickle.Pickler):
    def __init__(self, file: Any, helpers: dict[int, str], main: dict[str, Any]):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._helpers = helpers
        self._main = main

    def _by_value(self, fn: types.FunctionType) -> bool:
        """Made by the cells, or anywhere pickle cannot find it again by name."""
        return fn.__globals__ is self._main or not _findable(fn)

    def persistent_id(self, obj: Any) -> str | None:
        return self._helpers.get(id(obj))

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (obj.__name__,)
        if isinstance(obj, (staticmethod, classmethod)):  # in class bodies carried by value
            return type(obj), (obj.__func__,)
        if isinstance(obj, property):
            return property, (obj.fget, obj.fset, obj.fdel, obj.__doc__)
        if isinstance(obj, types.FunctionType) and self._by_value(obj):
            code = marshal.dumps(obj.__code__)
            g = obj.__globals__
            own = None if g is self._main else {
                n: g[n] for n in obj.__code__.co_names if n in g and n != "__builtins__"}
            state = {"defaults": obj.__defaults__, "kwdefaults": obj.__kwdefaults__,
                     "annotations": obj.__annotations__, "doc": obj.__doc__,
                     "dict": obj.__dict__}
            if obj.__closure__:
                contents = tuple(c.cell_contents for c in obj.__closure__)
                return (_new_function_with_closure, (code, obj.__name__, obj.__qualname__, own,
                                                     contents), state, None, None,
                        _set_function_state)
            return (_new_function, (code, obj.__name__, obj.__qualname__, own), state, None,
                    None, _set_function_state)
        if isinstance(obj, type) and (obj.__module__ == "__main__" or not _findable(obj)):
            attrs = {k: v for k, v in vars(obj).items() if k not in _SKIPPED_ATTRS}
            return (_new_class, (type(obj), obj.__name__, obj.__bases__), attrs, None, None,
                    _set_class)
        return NotImplemented


def _findable(obj: Any) -> bool:
    """Would pickle find `obj` again under its module and qualified name?"""
    found: Any = sys.modules.get(getattr(obj, "__module__", None) or "")
    for part in getattr(obj, "__qualname__", "<locals>").split("."):
        found = getattr(found, part, None)
        if found is None:
            return False
    return found is obj


def _set_function_state(fn: types.FunctionType, state: dict[str, Any]) -> None:
    fn.__defaults__ = state["defaults"]
    fn.__kwdefaults__ = state["kwdefaults"]
    fn.__annotations__ = state["annotations"]
    fn.__doc__ = state["doc"]
    fn.__dict__.update(state["dict"])


_ATOMS = frozenset({int, float, complex, str, bytes, bool, type(None), types.CodeType})
"""Objects marshal keeps exactly (they hold no other objects), and faster than a pickler."""


class _NotPlain(Exception):
    """The value holds an object that is not plain data."""


class _PlainPickler(pickle.Pickler):
    """The C pickler on the types it writes itself (numbers, strings, bytes, bytearrays,
    lists, tuples, dicts, sets), with no Python called per object: as fast as marshal, and
    exact. Any other object is refused, and the value goes with the full pickler's."""

    def reducer_override(self, obj: Any) -> Any:
        raise _NotPlain


def _plain(value: Any) -> tuple[str, bytes] | None:
    """("marshalled" or "pickled", the bytes) for plain data, else None."""
    if type(value) in _ATOMS:
        return "marshalled", marshal.dumps(value)
    out = io.BytesIO()
    try:
        _PlainPickler(out, protocol=5).dump(value)
    except (_NotPlain, pickle.PicklingError, RecursionError, TypeError, ValueError):
        return None
    return "pickled", out.getvalue()


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: Any, helpers: dict[str, Any]):
        super().__init__(file)
        self._helpers = helpers

    def persistent_load(self, pid: Any) -> Any:
        if pid in self._helpers:
            return self._helpers[pid]
        raise pickle.UnpicklingError(f"the new session has no {pid!r}")


def _pickle(values: dict[str, Any], helpers: dict[int, str], main: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    _Pickler(out, helpers, main).dump(values)
    return out.getvalue()


def _why(value: Any, exc: BaseException) -> str:
    kind = type(value).__name__
    if isinstance(value, types.GeneratorType):
        return "a generator (its position cannot be saved)"
    if isinstance(value, io.IOBase):
        return "an open file (open it again)"
    return f"a {kind} ({type(exc).__name__}: {str(exc)[:80]})"


def dump(ns: dict[str, Any], names: list[str], helpers: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """The pickled values of `names` in `ns`, and the names left behind with the reason.

    Plain data (the usual result of tool calls) goes alone, in C (`_plain`), many times
    faster than a pickler with Python hooks. The rest goes in one pickle so shared objects
    stay shared (an instance keeps its class); a name that cannot pickle is found alone and
    left out. (Data shared between two names is copied, unless both go in that pickle.)"""
    refs = {id(v): k for k, v in helpers.items()}
    values = {k: ns[k] for k in names if k in ns}
    plain: dict[str, dict[str, bytes]] = {"marshalled": {}, "pickled": {}}
    for name, value in list(values.items()):  # data alone, in C, once
        found = _plain(value)
        if found is not None:
            plain[found[0]][name] = found[1]
            del values[name]
    dropped: dict[str, str] = {}
    try:
        blob = _pickle(values, refs, ns) if values else b""
    except Exception:  # noqa: BLE001 - find the names at fault
        for name, value in list(values.items()):
            try:
                _pickle({name: value}, refs, ns)
            except Exception as exc:  # noqa: BLE001
                dropped[name] = _why(value, exc)
                del values[name]
        blob = _pickle(values, refs, ns)
    modules = sorted({name for name in _imported(ns) if name.split(".")[0] in sys.modules})
    return pickle.dumps({"format": _FORMAT, "values": blob, **plain, "modules": modules}), \
        dropped


_FIXED = (int, float, complex, str, bytes, bool, type(None), types.ModuleType)


def unchanged_since(ns: dict[str, Any], names: list[str], last: Any) -> tuple[Any, bool]:
    """(what to compare the next time, whether `names` hold what they held at `last`): the
    same objects, each one that cannot change in place (numbers, strings, modules, tuples of
    those). A checkpoint of such a namespace need not be taken again."""
    now = tuple((name, id(ns[name])) for name in names)
    fixed = all(_fixed(ns[name]) for name in names)
    return (now if fixed else None), fixed and now == last


def _fixed(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _FIXED):
        return True
    if type(value) is tuple and depth < 3 and len(value) <= 100:
        return all(_fixed(v, depth + 1) for v in value)
    return False


def _imported(ns: dict[str, Any]) -> list[str]:
    return [v.__name__ for v in ns.values() if isinstance(v, types.ModuleType)]


def load(data: bytes, ns: dict[str, Any], helpers: dict[str, Any]) -> dict[str, str]:
    """Put the saved values into `ns`; returns what could not come back, with the reason."""
    global _globals
    state = pickle.loads(data)
    if not isinstance(state, dict) or state.get("format") not in _READS:
        raise ValueError("not a session state this guest can read")
    failed: dict[str, str] = {}
    for module in state.get("modules", ()):
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001
            failed[module] = f"a module that no longer imports ({type(exc).__name__})"
    _globals = ns
    try:
        values = _Unpickler(io.BytesIO(state["values"]), dict(helpers)).load() \
            if state["values"] else {}
    finally:
        _globals = {}
    if "plain" in state:  # format 1: one marshal of every plain value
        ns.update(marshal.loads(state["plain"]))
    else:
        ns.update({name: marshal.loads(data) for name, data in state["marshalled"].items()})
        ns.update({name: pickle.loads(data) for name, data in state.get("pickled", {}).items()})
    ns.update(values)
    return failed


def lost_files(values: dict[str, Any]) -> dict[str, str]:
    """The open files among `values` (or held in them one level down: a list of files, an
    object's attribute), after the interpreter moved to a new process: their descriptors did
    not come along. Each number is taken by a placeholder (a folder, so reads and writes fail)
    so that a stale file object never reaches a file opened later."""
    lost, numbers = {}, set()
    for name, value in values.items():
        found = [n for n in map(_descriptor, _files(value)) if n is not None]
        if found:
            lost[name] = "an open file (open it again)" if isinstance(value, io.IOBase) else \
                "holds open files (open them again)"
            numbers.update(found)
    if numbers:
        _hold(numbers)
    return lost


def _descriptor(f: io.IOBase) -> int | None:
    """The descriptor of an open file of the old process (not the console: that one is
    there in every process, and nor are in-memory streams)."""
    try:
        number = None if f.closed else f.fileno()
    except (OSError, ValueError):
        return None
    return number if number is not None and number > 2 else None


def _files(value: Any) -> list[io.IOBase]:
    if isinstance(value, io.IOBase):
        return [value]
    if isinstance(value, (type, types.ModuleType)):
        return []
    if isinstance(value, dict):
        items = value.values()
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    else:
        items = getattr(value, "__dict__", {}).values()
    # By type first: an isinstance against the io.IOBase ABC costs about 1 us an item here,
    # 8 ms for a list of 10,000 dicts, in the turn that ends every exact restore.
    scanned = list(itertools.islice(items, _SCANNED))
    if not any(issubclass(kind, io.IOBase) for kind in set(map(type, scanned))):
        return []
    return [item for item in scanned if isinstance(item, io.IOBase)]


_SCANNED = 10_000
"""Items looked at per container: enough for lists of files, cheap for big data."""


def _hold(numbers: set[int]) -> None:
    import os

    spare = []
    try:
        for _ in range(max(numbers) + 1):  # a new descriptor gets the lowest free number
            fd = os.open(".", os.O_RDONLY)
            if fd not in numbers:
                spare.append(fd)
            if fd >= max(numbers):
                break
    except OSError:
        pass
    for fd in spare:
        os.close(fd)
