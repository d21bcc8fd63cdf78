"""Classes the cells defined, and objects Python's class machinery made for them, as a pickle
can make them again in another interpreter (see `persist`).

A class goes by value: made again empty by its metaclass, then given its attributes. What
Python keeps per class that cannot travel is left for the new class to make (its lazy
annotations as a dict instead, an ABC's cache), and the kinds whose metaclass will not make
an empty class (enums, TypedDicts) are made by their functional API. Some objects inside such
classes need to be found by name rather than copied: the dataclasses module's markers, which
fields() and the generated methods test by identity, and a function's lru_cache wrapper.
Others are made without calling what the cells wrote: an exception of theirs, whose __init__
rarely takes its own `args`; and a TypeVar of theirs is made again, not looked for by name.
A sqlite3 connection opens its file again, or an in-memory database with what it held. A
dict's keys, values or items view is made again on its dict, which comes along.
"""

from __future__ import annotations

import sys
import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["class_by_value", "new_class", "reduce", "set_class"]

_SKIPPED_ATTRS = {"__dict__", "__weakref__", "__module__", "__annotate_func__",
                  "__annotations_cache__", "__classdictcell__", "_abc_impl"}
"""Made by Python for each class: 3.14 computes annotations lazily, through a function whose
closure holds the class body's namespace (they go as a dict instead); an ABC's registry."""
_MARKERS = ("MISSING", "KW_ONLY", "_FIELD", "_FIELD_CLASSVAR", "_FIELD_INITVAR")
_VIEWS = {f"{prefix}_{kind}": (kind, prefix == "odict") for prefix in ("dict", "odict")
          for kind in ("keys", "values", "items")}
"""A dict view's type, by name: the method that makes it, and whether it is OrderedDict's."""


def new_class(meta: type, name: str, bases: tuple[type, ...],
              orig_bases: tuple[Any, ...] | None = None) -> type:
    """An empty class, made without the `__init_subclass__` the cells gave its bases: what it
    did the first time is in the state being loaded (a registry's entries, say), so running
    it again would do it twice; and the globals it reads are not back yet."""
    hooks = {id(c): c for base in bases for c in base.__mro__
             if c.__module__ == "__main__" and "__init_subclass__" in c.__dict__}
    saved = [(c, c.__dict__["__init_subclass__"]) for c in hooks.values()]
    for c, _hook in saved:
        c.__init_subclass__ = _quiet  # type: ignore[assignment, method-assign]
    body: dict[str, Any] = {"__module__": "__main__"}
    if orig_bases is not None:  # `Generic[T]` as written: typing's own checks read it
        body["__orig_bases__"] = orig_bases
    try:
        return meta(name, bases, body)
    finally:
        for c, hook in saved:
            type.__setattr__(c, "__init_subclass__", hook)


@classmethod  # type: ignore[misc]
def _quiet(cls: type, **kwargs: Any) -> None: ...


def set_class(cls: type, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        try:
            setattr(cls, key, value)
        except (AttributeError, TypeError):
            pass


def class_by_value(cls: type, main: dict[str, Any]) -> tuple[Any, ...]:
    """The reduction of a class the cells defined (or one pickle cannot find by name)."""
    enum = sys.modules.get("enum")
    if enum is not None and isinstance(cls, enum.EnumType):
        return _enum(cls, enum, main)
    typing = sys.modules.get("typing")
    if typing is not None and type(cls) is getattr(typing, "_TypedDictMeta", None):
        return _new_typed_dict, (cls.__name__, _annotations(cls) or {}, cls.__total__)
    attrs = {k: v for k, v in vars(cls).items() if k not in _SKIPPED_ATTRS}
    annotations = _annotations(cls)
    if annotations is not None:
        attrs["__annotations__"] = annotations
    made = (type(cls), cls.__name__, cls.__bases__)
    if "__orig_bases__" in attrs:
        made += (attrs["__orig_bases__"],)
    return new_class, made, attrs, None, None, set_class


def reduce(obj: Any, by_value: Callable[[types.FunctionType], bool]) -> Any:
    """The reduction of `obj` when it is one of the objects above, else NotImplemented.
    `by_value`: whether a function goes by value (see `persist`)."""
    if isinstance(obj, types.MappingProxyType):  # a dataclass field's metadata
        return _mapping_proxy, (dict(obj),)
    kind = type(obj)
    if kind.__module__ == "dataclasses":
        dataclasses = sys.modules["dataclasses"]
        for name in _MARKERS:
            if getattr(dataclasses, name, None) is obj:
                return getattr, (dataclasses, name)
    elif kind.__module__ == "functools" and kind.__name__ == "_lru_cache_wrapper":
        wrapped = getattr(obj, "__wrapped__", None)
        if isinstance(wrapped, types.FunctionType) and by_value(wrapped):
            params = obj.cache_parameters()  # its cache stays behind
            return _new_cached, (wrapped, params["maxsize"], params["typed"])
    elif kind.__module__ == "sqlite3" and kind.__name__ == "Connection":
        return _sqlite(obj)
    elif kind.__module__ == "builtins" and kind.__name__ in _VIEWS:
        return _dict_view(obj, *_VIEWS[kind.__name__])
    elif kind.__module__ == "__main__" and isinstance(obj, BaseException):
        # Pickled as usual, it is made again by calling the class with `args`, which an
        # __init__ of the cells' own rarely takes (`AppError(code, msg)` passes up `msg`).
        return _new_exception, (kind, obj.args), obj.__dict__ or None
    elif kind.__module__ == "typing" and kind.__name__ == "TypeVar" \
            and getattr(obj, "__module__", None) == "__main__":  # found by name otherwise
        return _new_type_var, (obj.__name__, obj.__constraints__, obj.__bound__,
                               obj.__covariant__, obj.__contravariant__)
    return NotImplemented


def _dict_view(view: Any, method: str, ordered: bool) -> Any:
    """A live view of its dict: made again on that dict (the very one, where the state holds
    it elsewhere too). The view shows its dict only through a read-only proxy, whose one
    referent is the dict itself."""
    import gc

    (mapping,) = gc.get_referents(view.mapping)
    return _new_dict_view, (mapping, method, ordered)


def _new_dict_view(mapping: dict[Any, Any], method: str, ordered: bool) -> Any:
    """By the base class's method: a subclass of the cells' may make `keys()` return
    something else."""
    import collections

    return getattr(collections.OrderedDict if ordered else dict, method)(mapping)


def _sqlite(conn: Any) -> Any:
    """A database connection: to its file again (the folder is not rolled back, so it reads
    what the file holds then), or an in-memory database with its contents."""
    (path,) = [row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"]
    return _new_sqlite, (path or None, None if path else conn.serialize())


def _new_sqlite(path: str | None, contents: bytes | None) -> Any:
    import sqlite3

    conn = sqlite3.connect(path or ":memory:")
    if contents is not None:
        conn.deserialize(contents)
    return conn


def _new_exception(kind: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    return BaseException.__new__(kind, *args)


def _new_type_var(name: str, constraints: tuple[Any, ...], bound: Any, covariant: bool,
                  contravariant: bool) -> Any:
    import typing

    made = typing.TypeVar(name, *constraints, bound=bound, covariant=covariant,
                          contravariant=contravariant)
    made.__module__ = "__main__"
    return made


def _annotations(cls: type) -> dict[str, Any] | None:
    try:
        found = cls.__dict__.get("__annotations__") or getattr(cls, "__annotations__", None)
        return dict(found) if found else None
    except Exception:  # noqa: BLE001 - a forward reference that names nothing: left out
        return None


def _mapping_proxy(mapping: dict[str, Any]) -> types.MappingProxyType[str, Any]:
    return types.MappingProxyType(mapping)


def _new_cached(fn: Any, maxsize: int | None, typed: bool) -> Any:
    import functools

    return functools.lru_cache(maxsize=maxsize, typed=typed)(fn)


def _new_typed_dict(name: str, annotations: dict[str, Any], total: bool) -> Any:
    import typing

    made = typing.TypedDict(name, annotations, total=total)  # type: ignore[operator]
    made.__module__ = "__main__"
    return made


def _enum(cls: Any, enum: Any, main: dict[str, Any]) -> tuple[Any, ...]:
    """An enum, made again by the functional API (its metaclass makes no class from an empty
    body and members set afterwards), then given the methods and class attributes its body
    added."""
    members = [(name, member._value_) for name, member in cls.__members__.items()]
    base = next(b for b in reversed(cls.__bases__) if isinstance(b, enum.EnumType))
    mixin = next((b for b in cls.__bases__ if not isinstance(b, enum.EnumType)), None)
    extra = {k: v for k, v in vars(cls).items() if k not in cls.__members__ and (
        not k.startswith("_") or isinstance(v, types.FunctionType) and v.__globals__ is main
        and k.startswith("__"))}
    return (_new_enum, (base, mixin, cls.__name__, cls.__qualname__, members), extra, None,
            None, set_class)


def _new_enum(base: Any, mixin: type | None, name: str, qualname: str,
              members: list[tuple[str, Any]]) -> Any:
    extra = {} if mixin is None else {"type": mixin}
    return base(name, members, module="__main__", qualname=qualname, **extra)
