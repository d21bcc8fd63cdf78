"""Cutting an exception down to what a traceback can show, before `traceback` walks it.

`traceback.TracebackException` builds an object for every frame of a stack, every exception
of a chain and every member of an exception group, though it shows few of the members: a
stack 100,000 frames deep or a group of 100,000 members takes the guest tens of seconds to
format, long enough to time the cell out and lose the session. So before it runs:
- a stack deeper than `HEAD + TAIL` frames keeps its first `HEAD` and last `TAIL` (where it
  failed), and the traceback says how many are left out between them;
- a chain of causes and contexts keeps its last `MAX_CHAIN` exceptions, with a note;
- a group keeps its first `MAX_MEMBERS` members (as many as the traceback shows), with a
  note saying how many it has.
Groups are replaced by stand-ins; every change to the code's own exceptions is undone after
formatting (`Cuts.undo`).
"""

from __future__ import annotations

import builtins
import collections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Cuts", "HEAD", "TAIL", "MAX_CHAIN", "MAX_MEMBERS", "cut_down", "let_go"]

HEAD = 12
TAIL = 30
MAX_CHAIN = 12
MAX_MEMBERS = 15
"""`TracebackException`'s own `max_group_width`: it shows no more of a group."""
MAX_DEPTH = 10
"""Its `max_group_depth`: groups nested deeper are not shown."""
DEEP = 10_000
"""A traceback this deep is let go of from its innermost frame outwards (`let_go`)."""
_MISSING = object()
_GROUP: Any = getattr(builtins, "BaseExceptionGroup", ())
"""Exception groups (none before Python 3.11, where the host may import this module)."""
_stand_in_classes: dict[type, type] = {}


class Cuts:
    """What `cut_down` changed, to undo, and where it left frames out."""

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any]] = []
        self.stacks: dict[int, tuple[int, int]] = {}
        """id(exception) -> (frames kept before the cut, frames left out)."""

    def set(self, obj: Any, name: str, value: Any) -> None:
        self._undo.append((obj, name, getattr(obj, name, _MISSING)))
        setattr(obj, name, value)

    def note(self, exc: BaseException, text: str) -> None:
        notes = getattr(exc, "__notes__", None)
        self.set(exc, "__notes__", [*(notes if isinstance(notes, list) else ()), text])

    def undo(self) -> None:
        for obj, name, old in reversed(self._undo):
            try:
                if old is _MISSING:
                    delattr(obj, name)
                else:
                    setattr(obj, name, old)
            except (AttributeError, TypeError):
                pass
        self._undo.clear()


def _shorten_stack(exc: BaseException, cuts: Cuts) -> None:
    tb = exc.__traceback__
    head: list[Any] = []
    tail: collections.deque[Any] = collections.deque(maxlen=TAIL)
    count = 0
    while tb is not None:
        (head if count < HEAD else tail).append(tb)
        count += 1
        tb = tb.tb_next
    if count <= HEAD + TAIL:
        return
    kept = None
    for entry in reversed([*head, *tail]):
        kept = type(entry)(kept, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    cuts.set(exc, "__traceback__", kept)
    cuts.stacks[id(exc)] = (HEAD, count - HEAD - TAIL)


def _stand_in_class(kind: type) -> type:
    """A subclass of the group's class that formats as it does (same name and module), whose
    `str()` is the original group's."""
    cls = _stand_in_classes.get(kind)
    if cls is None:
        cls = type(kind.__name__, (kind,), {
            "__module__": kind.__module__, "__qualname__": kind.__qualname__,
            "__init__": lambda self, *args, **kwargs: None,
            "__str__": lambda self: self._shown_str})
        _stand_in_classes[kind] = cls
    return cls


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - what traceback itself would print
        return "<exception str() failed>"


def _fit(exc: BaseException, depth: int = 0) -> BaseException:
    """`exc`, or a stand-in for a group holding at most the members the traceback shows."""
    if not isinstance(exc, _GROUP):
        return exc
    members = exc.exceptions
    if depth >= MAX_DEPTH:  # not shown at all: one member that leads nowhere stands in
        fitted: list[BaseException] = [Exception("left out")]
    else:
        fitted = [_fit(m, depth + 1) for m in members[:MAX_MEMBERS]]
        if len(members) <= MAX_MEMBERS and all(f is m for f, m in zip(fitted, members)):
            return exc
    try:
        stand_in = _GROUP.__new__(_stand_in_class(type(exc)), exc.message, fitted)
    except Exception:  # noqa: BLE001 - a class we cannot stand in for: format it whole
        return exc
    stand_in._shown_str = _safe_str(exc)
    stand_in.__traceback__ = exc.__traceback__
    stand_in.__cause__ = exc.__cause__
    stand_in.__context__ = exc.__context__
    stand_in.__suppress_context__ = exc.__suppress_context__
    notes = getattr(exc, "__notes__", None)
    if len(members) > len(fitted):
        notes = [*(notes if isinstance(notes, list) else ()),
                 f"(the group has {len(members):,} exceptions; the first {len(fitted)} are "
                 "shown)"]
    if notes is not None:
        stand_in.__notes__ = notes
    return stand_in


def _chain_length(exc: BaseException | None) -> int:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return len(seen)


def _relink(exc: BaseException, name: str, earlier: BaseException | None, cuts: Cuts) -> None:
    """Point `exc`'s cause or context at `earlier` (None: end the chain there). Assigning a
    cause also sets `__suppress_context__`, so that flag is recorded first and set last."""
    suppress = exc.__suppress_context__ or earlier is None
    cuts.set(exc, "__suppress_context__", suppress)
    cuts.set(exc, name, earlier)
    cuts.set(exc, "__suppress_context__", suppress)


def cut_down(exc: BaseException) -> tuple[BaseException, Cuts]:
    """The exception to format in place of `exc`, and the changes to undo afterwards."""
    cuts = Cuts()
    top = _fit(exc)
    queue: collections.deque[tuple[BaseException, int]] = collections.deque([(top, 0)])
    seen: set[int] = set()
    while queue:
        current, position = queue.popleft()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if current.__traceback__ is not None:
            _shorten_stack(current, cuts)
        if isinstance(current, _GROUP):
            queue.extend((m, 0) for m in current.exceptions)
        name = "__cause__" if current.__cause__ is not None else \
            None if current.__suppress_context__ else "__context__"
        earlier = getattr(current, name) if name else None
        if earlier is None:
            continue
        if position + 1 >= MAX_CHAIN:
            left = _chain_length(earlier)
            _relink(current, name, None, cuts)
            cuts.note(current, f"({left:,} earlier exceptions of this chain, which led to this "
                               "one, are left out)")
            continue
        fitted = _fit(earlier)
        if fitted is not earlier:
            _relink(current, name, fitted, cuts)
        queue.append((fitted, position + 1))
    return top, cuts


def let_go(exc: BaseException) -> None:
    """Free a very deep traceback of a failed cell from its innermost frame outwards.

    Freed the usual way, each entry frees the next: on the data runtime that recursion runs
    out of wasm stack (CPython 3.15 watches only the C stack in linear memory, which it
    hardly uses) and the interpreter is lost. The exception keeps no traceback after this.
    """
    entries = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    if len(entries) <= DEEP:
        return
    exc.__traceback__ = None
    for entry in entries:
        entry.tb_next = None
    del entry  # it holds the innermost frame, which holds the next through `f_back`
    while entries:
        entries.pop()
