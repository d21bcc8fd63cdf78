"""Running one cell: REPL-style value, top-level await, bounded output, trimmed tracebacks."""

from __future__ import annotations

import builtins
import opcode
import sys

from . import figures, reach
from .capture import Capture
from .convert import to_json_value
from .describe import describe
from .errors import describe_failure, remember_source, set_python_note, unawaited
from .stream import Streamer
from .tracebacks import let_go

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CellRunner", "FinalAnswer"]

_VALUE = "__tic_value__"
_FLAGS = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, without importing ast for every cell
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE
_LITERAL_START = tuple("'\"0123456789-+[({.") + ("None", "True", "False")
_MAX_NAMES = 300
_NAME_CHARS = 100
"""A name longer than this (only `globals()[...]` makes one) is shown cut."""
_DESCRIBED = 30


class FinalAnswer(BaseException):
    """Raised by `final_answer(value)`: ends the cell and hands `value` to the host."""

    def __init__(self, value: Any):
        super().__init__("final answer")
        self.value = value


_POP_TOP = opcode.opmap.get("POP_TOP")
_STORE_NAME = opcode.opmap.get("STORE_NAME")
_CONST_ARGS = {opcode.opmap[n] for n in ("LOAD_CONST", "RETURN_CONST") if n in opcode.opmap}


def _learn_tail() -> bytes | None:
    """How this interpreter ends a module whose last statement is an expression: POP_TOP and
    then "return None" (RETURN_CONST on 3.12, LOAD_COMMON_CONSTANT + RETURN_VALUE on 3.15),
    learned from a compiled cell rather than assumed for one version."""
    raw = compile("x\n", "<tail>", "exec", dont_inherit=True).co_code
    at = raw.rfind(bytes((_POP_TOP,)), 0, len(raw) - 2) if _POP_TOP is not None else -1
    while at > 0 and at % 2:
        at = raw.rfind(bytes((_POP_TOP,)), 0, at)
    return raw[at:] if at >= 0 else None


_TAIL = _learn_tail()


def _ends_like_tail(compiled: Any) -> bool:
    """The code ends with POP_TOP and the same "return None" as `_TAIL` (a constant's index
    may differ: it must name None)."""
    raw, tail = compiled.co_code, _TAIL
    if tail is None or len(raw) < len(tail):
        return False
    end = raw[-len(tail):]
    for at in range(0, len(tail), 2):
        op, arg = end[at], end[at + 1]
        if op != tail[at]:
            return False
        if op in _CONST_ARGS:
            if arg >= len(compiled.co_consts) or compiled.co_consts[arg] is not None:
                return False
        elif arg != tail[at + 1]:
            return False
    return True


def _may_end_in_expression(compiled: Any, code: str, ends: bool) -> bool:
    """Cheap test on the bytecode: could the last statement be an expression? Only then is
    the cell parsed again to keep that expression's value (most cells end otherwise).
    `ends`: whether it `_ends_like_tail`, as the caller found."""
    if _TAIL is None:  # an interpreter whose bytecode we do not know: always check
        return True
    if compiled.co_exceptiontable:  # handlers are laid out after the end: the tail says nothing
        return True
    if ends:
        return True
    last = code.rstrip().rpartition("\n")[2]
    return last[:1] not in (" ", "\t") and last.startswith(_LITERAL_START)  # a bare constant


def _patch(compiled: Any) -> Any:
    """`compiled` with the POP_TOP that ends `_TAIL` turned into `STORE_NAME __tic_value__`
    (same size and stack effect)."""
    raw, n = compiled.co_code, len(_TAIL or b"")
    patched = raw[:-n] + bytes((_STORE_NAME, len(compiled.co_names))) + raw[-n + 2:]
    return compiled.replace(co_code=patched, co_names=(*compiled.co_names, _VALUE))


def _patch_works() -> bool:
    """The patch, tried once on a known cell: a bytecode it does not suit keeps the slow,
    sure path (parse, rewrite, compile)."""
    if _TAIL is None or _STORE_NAME is None:
        return False
    try:
        ns: dict[str, Any] = {"x": 41}
        exec(_patch(compile("x + 1\n", "<tail>", "exec", dont_inherit=True)), ns)
        return ns.get(_VALUE) == 42
    except Exception:  # noqa: BLE001 - any failure only means: do not patch
        return False


_PATCHABLE: bool | None = None
"""Whether `_patch` suits this bytecode: tried at the first cell."""


def _value_kept_in_bytecode(compiled: Any) -> Any:
    """The cell's code with its final expression statement stored instead of dropped, made
    by rewriting one instruction, or None when the cell does not end that simple way. It
    saves the `ast` module (tens of ms to import in the guest) and a second compile per
    cell."""
    global _PATCHABLE
    if _PATCHABLE is None:
        _PATCHABLE = _patch_works()
    if (not _PATCHABLE or compiled.co_exceptiontable or len(compiled.co_names) >= 256
            or not _ends_like_tail(compiled)):
        return None
    positions = list(compiled.co_positions())
    at = len(positions) - len(_TAIL or b"") // 2  # the POP_TOP's
    if at < 1 or positions[at][2] != 0:  # not a statement starting in column 0
        return None
    return _patch(compiled)


def _compile_keeping_value(code: str, filename: str) -> Any:
    import ast

    tree = ast.parse(code, filename, "exec", type_comments=False)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        target = ast.Name(id=_VALUE, ctx=ast.Store())
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
        ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", flags=_FLAGS, dont_inherit=True)


class CellRunner:
    """One interpreter's user namespace and the cells run in it."""

    def __init__(self) -> None:
        self.ns: dict[str, Any] = {}
        self.baseline: set[str] = set()
        self.helpers: dict[str, Any] = {}
        self.count = 0
        self._loop: Any = None
        self._names: list[str] = []
        self._output_chars: int | None = None
        self._value_chars = 4000
        self._spill_bytes = 0
        self._spill_dir: str | None = None
        self.own: set[Any] | None = None
        """The namespace's keys that are not the baseline's, as the last cell left them; None
        when not known (`changed`). With hundreds of tools in the namespace, taking them
        again costs more than the rest of a small cell's bookkeeping."""
        self.reach: reach.Reach | None = None
        """What the last cell run with `reaching` could change (`reach.of`); None: anything."""

    def changed(self) -> None:
        """The namespace may have changed outside a cell (a setup, a restore)."""
        self.own = None

    def reset(self, helpers: dict[str, Any], limits: dict[str, Any]) -> None:
        self.own = None
        self.ns.clear()
        self.ns.update({"__name__": "__main__", "__builtins__": builtins})
        self.ns.update(helpers)
        self.helpers = helpers
        self.baseline = set(self.ns)
        self._names = []
        self._output_chars = limits.get("output_chars")
        self._value_chars = limits.get("value_chars") or 4000
        self._spill_bytes = limits.get("spill_bytes") or 0
        self._spill_dir = limits.get("spill_dir")
        set_python_note(limits.get("python_note"))
        figures.configure(limits)

    def own_keys(self) -> set[Any]:
        """The namespace's keys that are not the baseline's (`own`, when known)."""
        return self.own if self.own is not None else self.ns.keys() - self.baseline

    @staticmethod
    def _user_keys(own: set[Any]) -> list[str]:
        """The cells' global names among `own`, sorted (`globals()[1] = 2` makes a key that
        is no name)."""
        return sorted(k for k in own if type(k) is str and k != "_" and not k.startswith("__"))

    def user_names(self) -> list[str]:
        return [_shown(k) for k in self._user_keys(self.own_keys())[:_MAX_NAMES]]

    def _loop_for_cell(self) -> Any:
        if self._loop is None or self._loop.is_closed():
            import asyncio

            self._loop = asyncio.new_event_loop()
        return self._loop

    def _execute(self, code: str, filename: str, own: set[Any] | None) -> Any:
        compiled = compile(code, filename, "exec", flags=_FLAGS, dont_inherit=True)
        if own is not None:
            try:
                self.reach = reach.of(compiled, code, self.ns, own, self.helpers, self._loop)
            except Exception:  # noqa: BLE001 - not known: the whole state is kept again
                self.reach = None
        is_async = bool(compiled.co_flags & _CO_COROUTINE)
        ends = not is_async and _ends_like_tail(compiled)  # most cells do not: tested once
        patched = _value_kept_in_bytecode(compiled) if ends else None
        if patched is not None:
            compiled = patched
        elif is_async or _may_end_in_expression(compiled, code, ends):
            compiled = _compile_keeping_value(code, filename)
        self.ns.pop(_VALUE, None)
        if is_async:
            self._loop_for_cell().run_until_complete(eval(compiled, self.ns))
        else:
            exec(compiled, self.ns)
        return self.ns.pop(_VALUE, None)

    def _capture(self, stream: str, limit: int | None = None) -> Capture:
        """A bounded stream for this cell's `stream` (stdout, stderr, error, value): past
        `limit` (the output limit by default) the whole of it is saved in the folder."""
        spill = self._spill_dir
        return Capture(stream, limit if limit is not None else self._output_chars,
                       f"{spill}/cell-{self.count}-{stream}.txt" if spill else None,
                       self._spill_bytes)

    def _describe_value(self, value: Any, result: dict[str, Any]) -> None:
        out = self._capture("value", self._value_chars)
        out.write(_repr(value))
        info = out.result()
        result["value"] = info.pop("text")
        if info["cut"]:
            result["value_cut"] = info

    def run(self, code: str, stream: int | None = None,
            streaming: bool = False, reaching: bool = False) -> dict[str, Any]:
        """Run one cell. The report leaves out what is empty or unchanged (the host keeps the
        last list of names), to keep the common small cell cheap. With `streaming`, what the
        cell prints is also sent to the host as it comes, `stream` characters at most (None:
        no limit). With `reaching`, what the cell could change is kept in `reach`."""
        self.count += 1
        figures.begin(self.count)
        filename = f"<cell-{self.count}>"
        remember_source(filename, code)
        out, err = self._capture("stdout"), self._capture("stderr")
        streamer = Streamer(stream, out, err) if streaming else None
        if streamer is not None:
            streamer.start()
        ns = self.ns
        own = self.own_keys()
        self.own = None  # until this cell's end takes them again
        before = {k: id(ns.get(k)) for k in own}
        result: dict[str, Any] = {"ok": True}
        # Until the code compiles, nothing of it ran; unasked, anything may have changed.
        self.reach = reach.NOTHING if reaching else None
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            value = self._execute(code, filename, own if reaching else None)
            if value is not None:
                ns["_"] = value
                if self.reach is not None:
                    self.reach = reach.Reach((*self.reach.names, "_"), self.reach.own)
                self._describe_value(value, result)
        except FinalAnswer as fa:
            result["has_final"] = True
            result["final"] = to_json_value(fa.value)
        except BaseException as exc:  # noqa: BLE001 - SystemExit included: the cell just ends
            result.update(describe_failure(exc, self._capture("error")))
            let_go(exc)
        finally:
            figures.finish(result)  # still captured: matplotlib's warnings are the cell's
            sys.stdout, sys.stderr = saved
            aio = sys.modules.get("tooliscode_guest.aio")
            forgotten = aio.cancel_all() if aio is not None else []
            if forgotten and result["ok"]:  # a failed cell's error says what to fix first
                err.write(unawaited(forgotten))
            if streamer is not None:  # before the descriptors' own buffered output
                streamer.finish()
            for raw in (sys.__stdout__, sys.__stderr__):
                try:
                    raw.flush()  # C-level and sys.__stdout__ writes reach the host now
                except Exception:  # noqa: BLE001
                    pass
        if out.total:
            result["stdout"] = out.result()
        if err.total:
            result["stderr"] = err.result()
        self.own = ns.keys() - self.baseline
        keys = self._user_keys(self.own)
        names = [_shown(k) for k in keys[:_MAX_NAMES]]
        if names != self._names:
            result["names"] = self._names = names
        new = [k for k in keys if before.get(k) != id(ns.get(k))]
        if new:
            result["new_names"] = [_shown(k) for k in new[:_MAX_NAMES]]
            if len(new) > _MAX_NAMES:
                result["new_names_left_out"] = len(new) - _MAX_NAMES
            if result["ok"] and not out.total and "value" not in result \
                    and not result.get("has_final"):
                result["described"] = {_shown(k): describe(ns[k]) for k in new[:_DESCRIBED]}
        return result


def _shown(name: str) -> str:
    return name if len(name) <= _NAME_CHARS else name[:_NAME_CHARS - 1] + "…"


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:  # noqa: BLE001 - user objects' __repr__ may raise anything
        try:
            return f"<repr failed: {type(exc).__name__}: {exc}>"
        except Exception:  # noqa: BLE001 - its message too
            return f"<repr failed: {type(exc).__name__}>"
