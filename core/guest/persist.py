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

from . import kinds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["TooBig", "chain", "dump", "load", "lost_files", "plain"]

_FORMAT = 3
"""3: every value in one pickle, tools named by `reducer_override` (no `persistent_id`, which
Python calls for every object): plain data pickles in C, and objects shared between names stay
shared. Format 2 marshalled plain values one by one, and marshal writes any object with a
buffer (a bytearray, an array.array) as bytes: they came back changed."""
_READS = (1, 2, 3)
_globals: dict[str, Any] = {}
"""The namespace functions are rebuilt into while `load` runs."""
_tools: dict[str, Any] = {}
"""The new session's tools (and other helpers), by name, while `load` runs."""


def _namespace(own: dict[str, Any] | None) -> dict[str, Any]:
    """The cells' namespace, or the few globals a function made elsewhere needs (a
    namedtuple's `__new__`, made by `eval` in a namespace of its own)."""
    return _globals if own is None else {"__builtins__": __builtins__, **own}


def _new_function(code: bytes, name: str, qualname: str, own: dict[str, Any] | None = None,
                  cells: tuple[types.CellType, ...] | None = None) -> types.FunctionType:
    fn = types.FunctionType(marshal.loads(code), _namespace(own), name, None, cells)
    fn.__qualname__ = qualname
    return fn


def _new_function_with_cells(code: bytes, name: str, qualname: str,
                             own: dict[str, Any] | None, cells: int) -> types.FunctionType:
    """Its cells empty: `_set_function_state` fills them once the function is made, since
    what they hold may be the function itself (a closure that calls itself)."""
    return _new_function(code, name, qualname, own, tuple(types.CellType() for _ in range(cells)))


def _new_function_with_closure(code: bytes, name: str, qualname: str, own: dict[str, Any] | None,
                               closure: tuple[Any, ...]) -> types.FunctionType:
    """As states saved before `_new_function_with_cells` made functions with a closure."""
    return _new_function(code, name, qualname, own, tuple(types.CellType(v) for v in closure))


class _Empty:
    """What a closure's cell that held nothing (a name not assigned yet) is saved as."""

    def __reduce__(self) -> str:
        return "_EMPTY"  # by name: the very object


_EMPTY = _Empty()


def _contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


class _Pickler(pickle.Pickler):
    """The C pickler, which writes numbers, strings, bytes, bytearrays, lists, tuples, dicts
    and sets itself: only for other objects is `reducer_override` called, so plain data (the
    usual result of tool calls) pickles as fast as marshal would write it."""

    def __init__(self, file: Any, helpers: dict[int, str], main: dict[str, Any]):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._helpers = helpers
        self._main = main

    def _by_value(self, fn: types.FunctionType) -> bool:
        """Made by the cells, or anywhere pickle cannot find it again by name."""
        return fn.__globals__ is self._main or not _findable(fn)

    def reducer_override(self, obj: Any) -> Any:
        helper = self._helpers.get(id(obj))
        if helper is not None:  # a tool: the new session's own
            return _tool, (helper,)
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
            if obj.__closure__:  # filled once made: a closure may hold the function itself
                state["closure"] = tuple(_contents(c) for c in obj.__closure__)
                return (_new_function_with_cells, (code, obj.__name__, obj.__qualname__, own,
                                                   len(obj.__closure__)), state, None, None,
                        _set_function_state)
            return (_new_function, (code, obj.__name__, obj.__qualname__, own), state, None,
                    None, _set_function_state)
        if isinstance(obj, type) and (obj.__module__ == "__main__" or not _findable(obj)):
            return kinds.class_by_value(obj, self._main)
        return kinds.reduce(obj, self._by_value)


_new_class, _set_class = kinds.new_class, kinds.set_class
"""Where states saved before `kinds` was split off name them."""


def _findable(obj: Any) -> bool:
    """Would pickle find `obj` again under its module and qualified name?"""
    found: Any = sys.modules.get(getattr(obj, "__module__", None) or "")
    for part in getattr(obj, "__qualname__", "<locals>").split("."):
        found = getattr(found, part, None)
        if found is None:
            return False
    return found is obj


def _set_function_state(fn: types.FunctionType, state: dict[str, Any]) -> None:
    for cell, value in zip(fn.__closure__ or (), state.get("closure", ())):
        if value is not _EMPTY:
            cell.cell_contents = value
    fn.__defaults__ = state["defaults"]
    fn.__kwdefaults__ = state["kwdefaults"]
    fn.__annotations__ = state["annotations"]
    fn.__doc__ = state["doc"]
    fn.__dict__.update(state["dict"])


def _tool(name: str) -> Any:
    if name in _tools:
        return _tools[name]
    raise pickle.UnpicklingError(f"the new session has no {name!r}")


class _Unpickler(pickle.Unpickler):
    """For formats 1 and 2, which named tools by persistent id."""

    def __init__(self, file: Any, helpers: dict[str, Any]):
        super().__init__(file)
        self._helpers = helpers

    def persistent_load(self, pid: Any) -> Any:
        if pid in self._helpers:
            return self._helpers[pid]
        raise pickle.UnpicklingError(f"the new session has no {pid!r}")


class TooBig(Exception):
    """The pickled values would be more than the limit given (`dump`)."""

    def __init__(self, size: int):
        super().__init__(size)
        self.size = size


class _Bounded(io.BytesIO):
    """A pickle's output that stops it once past `limit` bytes: a state over the limit
    costs its first `limit` bytes of pickling, not all of it (nor the memory for all of
    it). The pickler writes in frames of 64 KiB, and big objects at once."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def write(self, data: Any) -> int:
        size = self.tell() + memoryview(data).nbytes
        if size > self.limit:
            raise TooBig(size)
        return super().write(data)


def _pickle(values: dict[str, Any], helpers: dict[int, str], main: dict[str, Any],
            limit: int | None = None) -> bytes:
    out = io.BytesIO() if limit is None else _Bounded(limit)
    _Pickler(out, helpers, main).dump(values)
    return out.getvalue()


def _why(value: Any, exc: BaseException) -> str:
    kind = type(value).__name__
    if isinstance(value, types.GeneratorType):
        return "a generator (its position cannot be saved)"
    if isinstance(value, io.IOBase):
        return "an open file (open it again)"
    return f"a {kind} ({type(exc).__name__}: {str(exc)[:80]})"


def dump(ns: dict[str, Any], names: list[str], helpers: dict[str, Any],
         limit: int | None = None, removed: list[str] | None = None
         ) -> tuple[bytes, dict[str, str]]:
    """The pickled values of `names` in `ns`, and the names left behind with the reason;
    `TooBig` once they are past `limit` bytes. `removed`: names a delta takes away from the
    state it follows (see `load`).

    One pickle, so objects shared between names stay shared (an instance keeps its class);
    a name that cannot pickle is found alone and left out."""
    values = {k: ns[k] for k in names if k in ns}
    if set(map(type, values.values())) <= _SCALAR_TYPES \
            and sum(map(sys.getsizeof, values.values())) <= _SCALARS_AT_ONCE:
        # Numbers and strings, as a delta after a small cell mostly holds: nothing to name,
        # nothing to bound (a pickler of ours and its checks cost as much as the rest).
        return plain(values, removed), {}
    refs = _refs(helpers)
    dropped: dict[str, str] = {}
    try:
        blob = _pickle(values, refs, ns, limit) if values else b""
    except (MemoryError, TooBig):  # not the values' fault: the caller must see it
        raise
    except Exception:  # noqa: BLE001 - find the names at fault
        for name, value in list(values.items()):
            try:
                _pickle({name: value}, refs, ns, limit)
            except (MemoryError, TooBig):
                raise
            except Exception as exc:  # noqa: BLE001
                dropped[name] = _why(value, exc)
                del values[name]
        blob = _pickle(values, refs, ns, limit)
    modules = sorted({name for name in _imported(values) if name.split(".")[0] in sys.modules})
    return _state(blob, modules, removed), dropped


def plain(values: dict[str, Any], removed: list[str] | None = None) -> bytes:
    """Values that need no pickler of ours (numbers, strings, bytes, None), as a state `load`
    reads: a delta the host was given as they are is made so only if a rollback loads it."""
    return _state(pickle.dumps(values, pickle.HIGHEST_PROTOCOL), [], removed)


def chain(parts: list[bytes]) -> bytes:
    """States one after another (a whole one, then what later cells changed), as one state
    that `load` reads part after part."""
    return pickle.dumps({"format": _FORMAT, "parts": parts})


def _state(blob: bytes, modules: list[str], removed: list[str] | None) -> bytes:
    """The saved state as `load` reads it: the pickled values, the modules to import first,
    and (a delta's) the names to take away."""
    state: dict[str, Any] = {"format": _FORMAT, "values": blob, "modules": modules}
    if removed:
        state["removed"] = removed
    return pickle.dumps(state)


_SCALAR_TYPES = frozenset({int, float, complex, str, bytes, bool, type(None)})
_SCALARS_AT_ONCE = 4096
"""Values of `_SCALAR_TYPES` taking up to this many bytes pickle with the plain pickler."""


def _imported(values: dict[str, Any]) -> list[str]:
    return [v.__name__ for v in values.values() if isinstance(v, types.ModuleType)]


_helpers_seen: tuple[dict[str, Any], dict[int, str]] | None = None
"""The last helpers `dump` was given and the names by object id made of them: a session's
helpers (its tools) are one dict until its next setup, never changed in place, and with
hundreds of tools taking them again cost more than the rest of a small state's dump."""


def _refs(helpers: dict[str, Any]) -> dict[int, str]:
    global _helpers_seen
    seen = _helpers_seen
    if seen is None or seen[0] is not helpers:
        seen = _helpers_seen = (helpers, {id(v): k for k, v in helpers.items()})
    return seen[1]


def load(data: bytes, ns: dict[str, Any], helpers: dict[str, Any]) -> dict[str, str]:
    """Put the saved values into `ns`; returns what could not come back, with the reason.
    A chain (`parts`: a whole state, then deltas, as the host keeps rollback points) is
    loaded part after part."""
    state = pickle.loads(data)
    if not isinstance(state, dict) or state.get("format") not in _READS:
        raise ValueError("not a session state this guest can read")
    parts = state.get("parts")
    if parts is None:
        return _load(state, ns, helpers)
    failed: dict[str, str] = {}
    for part in parts:
        delta = pickle.loads(part)
        if not isinstance(delta, dict) or delta.get("format") not in _READS:
            raise ValueError("not a session state this guest can read")
        for name in delta.get("removed", ()):
            ns.pop(name, None)
            failed.pop(name, None)
        came = _load(delta, ns, helpers)
        for name in set(failed).difference(came):  # made again by a later part
            if name in ns:
                del failed[name]
        failed.update(came)
    return failed


def _load(state: dict[str, Any], ns: dict[str, Any], helpers: dict[str, Any]
          ) -> dict[str, str]:
    global _globals, _tools
    failed: dict[str, str] = {}
    for module in state.get("modules", ()):
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001
            failed[module] = f"a module that no longer imports ({type(exc).__name__})"
    _globals, _tools = ns, dict(helpers)
    try:
        values = _values(state["values"], _tools, failed)
    finally:
        _globals, _tools = {}, {}
    if "plain" in state:  # format 1: one marshal of every plain value
        ns.update(marshal.loads(state["plain"]))
    elif "marshalled" in state:  # format 2: each plain value marshalled alone
        ns.update({name: marshal.loads(data) for name, data in state["marshalled"].items()})
    ns.update(values)
    return failed


def _values(blob: bytes, helpers: dict[str, Any], failed: dict[str, str]) -> dict[str, Any]:
    """The pickled names; when one holds an object that cannot be made again, the others
    (`salvage`), the ones left out put in `failed`."""
    if not blob:
        return {}
    try:
        return _Unpickler(io.BytesIO(blob), helpers).load()
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - read it again, keeping what can be kept
        from . import salvage

        values, broken = salvage.load(blob, helpers)
        failed.update(broken)
        return values


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
