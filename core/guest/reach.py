"""What a cell can change, read from its bytecode before it runs.

A session on a runtime that cannot copy its interpreter pickles its variables after each cell,
as the point a stopped cell comes back to (`persist.dump`). Pickling them all again after a
cell that touched none of them is most of that cost. Code reaches the session's objects
through names, and a compiled cell lists every global and attribute name it uses
(`co_names`, nested functions included). So when the only variables a cell names held
values that cannot change in place (numbers, strings, tuples of those, modules of the
standard library), every other variable is the very object the last point pickled, unchanged,
and the point after the cell is that point plus the named variables' new values (a delta).

Reflection reaches objects without naming them: by strings (`getattr`, `globals()`,
`vars()`, `__dict__`), through frames (`f_globals`), the collector or pickle, a module that
is not the standard library's, a builtin an earlier cell replaced, or a task an earlier cell
left in the event loop. Modules and tool functions outlive cells, and an attribute of one
may have been made to hold the session's objects: a cell that names an attribute of one that
holds data, or a function a cell made, is unknown, and once a cell has set an attribute
while it reached one (or used reflection), every cell that reaches one is (`_tainted`). A cell
that could do any of that is "unknown" (`None`), and the whole state is pickled again, as it
always was. Each delta chain also ends in a whole pickle after a few cells (the host's
`Points`), so even a way missed here lasts only until then.
"""

from __future__ import annotations

import builtins
import opcode
import sys
import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["NOTHING", "Reach", "fixed", "forget", "of", "settle"]

_DENIED = frozenset({
    "globals", "locals", "vars", "eval", "exec", "compile", "getattr", "setattr", "delattr",
    "breakpoint", "attrgetter", "methodcaller", "get_objects", "get_referrers",
    "get_referents", "modules"})
"""Names through which code reaches objects by strings or by the interpreter's own tables."""
_FRAMES = ("_", "f_", "gi_", "cr_", "ag_", "tb_")
"""Prefixes of the attributes that lead to frames and their globals (and of private and
special names: `__dict__`, `__globals__`, `_getframe`), unless a variable of the cell's own."""
_REFLECTIVE = frozenset({
    "gc", "inspect", "ctypes", "pickle", "marshal", "copyreg", "shelve", "importlib", "runpy",
    "code", "codeop", "pdb", "bdb", "sys", "builtins", "traceback", "types", "weakref",
    "atexit", "threading", "faulthandler", "tracemalloc", "dis", "operator", "functools"})
"""Standard modules whose functions reach objects by reflection or call what they are given
by name: a cell that imports one is unknown."""
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) - _REFLECTIVE
_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})
_IMPORT_NAME = opcode.opmap.get("IMPORT_NAME", -1)
_IMPORT_BYTE = bytes((max(_IMPORT_NAME, 0),))
_EXTENDED_ARG = opcode.opmap.get("EXTENDED_ARG", -1)
_ORIGINAL: dict[str, Any] = {}
"""The builtins as the guest set them up (`settle`)."""
_MISSING = object()


def _learn_import_shift() -> int | None:
    """How IMPORT_NAME's argument names its module: the index in `co_names` (3.14), or that
    index shifted left by two (3.15 keeps flags in the low bits). Learned from a compiled
    import rather than assumed per version; None: unknown, every import is then unknown."""
    code = compile("import a\nimport b\n", "<reach>", "exec", dont_inherit=True)
    args = _import_args(code)
    if args is None or len(args) != 2 or code.co_names[:2] != ("a", "b"):
        return None
    return {(0, 1): 0, (0, 4): 2}.get(tuple(args))


def _import_args(code: types.CodeType) -> list[int] | None:
    """The arguments of `code`'s IMPORT_NAME instructions (None past one byte of argument)."""
    raw, args = code.co_code, []
    at = raw.find(_IMPORT_BYTE)
    while at >= 0:
        if at % 2 == 0:  # an instruction, not an argument byte that equals the opcode
            if at >= 2 and raw[at - 2] == _EXTENDED_ARG:
                return None
            args.append(raw[at + 1])
        at = raw.find(_IMPORT_BYTE, at + 1)
    return args


_SHIFT = _learn_import_shift() if _IMPORT_NAME >= 0 else None
_STAR = ("*",)
"""A star import's list of names, among its code's constants."""


class Reach:
    """The names a cell's code uses, and which of them were the session's variables."""

    __slots__ = ("names", "own")

    def __init__(self, names: tuple[str, ...], own: tuple[str, ...]) -> None:
        self.names = names
        """Every name the code uses: a variable it sets is among them."""
        self.own = own
        """Those that were the session's variables before the cell (to tell a `del`)."""


NOTHING = Reach((), ())
"""What a cell that did not compile reached: nothing ran."""


def of(compiled: types.CodeType, source: str, ns: dict[str, Any], own: set[Any],
       helpers: dict[str, Any], loop: Any = None) -> Reach | None:
    """What `compiled` (from `source`), about to run in `ns` (whose cell variables are
    `own`), can change, or None when it could reach the session's objects without naming
    them (see the module's docstring). `loop`: the cells' event loop, if one was made. It
    runs before every cell whose host keeps points: the usual cell (no function in it, no
    import) takes the short way."""
    global _tainted
    names: Any = compiled.co_names
    if any(type(c) is types.CodeType for c in compiled.co_consts):
        codes, seen = [compiled], set(names)
        for code in codes:  # grows as nested functions and classes are found
            seen.update(code.co_names)
            codes.extend(c for c in code.co_consts if type(c) is types.CodeType)
        names = tuple(seen)
    else:
        codes = (compiled,)
    shared: list[Any] = []
    """Modules and tool functions the cell reaches: objects that outlive cells, whose
    attributes an earlier cell may have made hold the session's objects."""
    if _IMPORT_NAME >= 0 and "import" in source:  # no import statement without the word
        for code in codes:
            if code.co_code.find(_IMPORT_BYTE) >= 0:
                modules = _imported(code)
                if modules is None or _STAR in code.co_consts:
                    return None  # `from m import *` binds names the code does not list
                shared.extend(modules)
    if not _tainted and (shared or any(
            name in helpers or (name in own and type(ns.get(name)) is types.ModuleType)
            for name in names)) and any(_at(code, _ATTRIBUTE_WRITES) for code in codes):
        _tainted = True  # it may set an attribute of one to one of the session's objects
    mine, current = [], builtins.__dict__
    for name in names:
        if name in own:
            value = ns.get(name)
            if type(value) not in _SCALARS:
                if not fixed(value):
                    return None
                if type(value) is types.ModuleType:
                    shared.append(value)
            mine.append(name)
        elif name in helpers:
            shared.append(helpers[name])
        elif name in _DENIED or name.startswith(_FRAMES):
            _tainted = True  # reflection may have put any object anywhere
            return None
        elif _ORIGINAL.get(name, _MISSING) is not current.get(name, _MISSING):
            return None  # a builtin replaced: calling it may run anything
    if shared and (_tainted or not _attributes_plain(shared, names, ns)):
        return None
    if loop is not None and _busy(loop):
        return None  # an earlier cell's task or callback may run while this one awaits
    return Reach(names, tuple(mine))


_tainted = False
"""Some cell may have made a module's or tool function's attribute hold one of the session's
objects (it set an attribute while reaching one, or used reflection): from then on a cell
that reaches a module or tool function is unknown (`forget` starts over)."""


def forget() -> None:
    """A new session's namespace: what earlier cells may have hung on modules is not its."""
    global _tainted
    _tainted = False


def _attributes_plain(shared: list[Any], names: Any, ns: dict[str, Any]) -> bool:
    """Every attribute of `shared` that the cell names is a number or string, a function
    of the library's (not one a cell made, whose globals are the session's), a class or a
    standard module: none holds the session's objects."""
    for target in shared:
        attributes = getattr(target, "__dict__", None)
        if type(attributes) is not dict:
            continue
        for name in names:
            value = attributes.get(name, _MISSING)
            if value is _MISSING or type(value) in _SCALARS or isinstance(value, type):
                continue
            if type(value) is types.ModuleType:
                if _standard(value):
                    continue
            elif callable(value) and getattr(value, "__globals__", None) is not ns:
                continue
            return False
    return True


def _at(code: types.CodeType, ops: bytes) -> bool:
    """Whether `code` has an instruction among `ops` (opcodes)."""
    raw = code.co_code
    for op in ops:
        at = raw.find(op)
        while at >= 0:
            if at % 2 == 0:
                return True
            at = raw.find(op, at + 1)
    return False


_ATTRIBUTE_WRITES = tuple(bytes((opcode.opmap[n],)) for n in ("STORE_ATTR", "DELETE_ATTR")
                          if n in opcode.opmap)


def _imported(code: types.CodeType) -> list[Any] | None:
    """The modules `code` imports, each one of the standard library's that reflects on
    nothing and is already imported from there (not a file of the same name in the
    session's folder, whose code could do anything); None when any is not."""
    args = _import_args(code) if _SHIFT is not None else None
    if args is None:
        return None
    found = []
    for arg in args:
        index = arg >> _SHIFT
        if index >= len(code.co_names):
            return None
        module = sys.modules.get(code.co_names[index])
        if module is None or not _standard(module):
            return None  # its first import runs its code: a cell that does it is unknown
        found.append(module)
    return found


def _standard(module: Any) -> bool:
    """A module of the standard library that reflects on nothing (`_REFLECTIVE`)."""
    name = getattr(module, "__name__", None)
    if type(name) is not str or name.partition(".")[0] not in _STDLIB:
        return False
    where = getattr(module, "__file__", None)
    return where is None or (type(where) is str and not where.startswith(_FOLDER))


_FOLDER = "/session/"
"""Where the session's own files (and so modules) live (`settle`)."""


def settle(folder: str | None) -> None:
    """Once the guest is set up: its builtins as they are now (`exit` is the cell's own),
    and the session's folder, where a module is the session's, not the library's."""
    global _FOLDER
    _ORIGINAL.clear()
    _ORIGINAL.update(builtins.__dict__)
    if folder:
        _FOLDER = folder.rstrip("/") + "/"


def fixed(value: Any, depth: int = 0) -> bool:
    """A value that cannot change in place: a number, string, bytes, None, a standard module,
    or a small tuple of those."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is types.ModuleType:
        return _standard(value)
    if kind is tuple and depth < 3 and len(value) <= 100:
        return all(fixed(v, depth + 1) for v in value)
    return False


def _busy(loop: Any) -> bool:
    """The loop holds work an earlier cell left (a task, a callback, a timer)."""
    try:
        if getattr(loop, "_ready", None) or getattr(loop, "_scheduled", None):
            return True
        import asyncio

        return bool(asyncio.all_tasks(loop))
    except Exception:  # noqa: BLE001 - a loop we cannot read is one we cannot vouch for
        return True
