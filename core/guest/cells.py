"""Running one cell: REPL-style value, top-level await, bounded output, trimmed tracebacks."""

from __future__ import annotations

import builtins
import opcode
import sys

from . import figures
from .capture import Capture
from .convert import to_json_value
from .describe import describe
from .tools import ToolArgumentError, ToolError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import traceback
    from typing import Any

__all__ = ["CellRunner", "FinalAnswer", "describe_failure", "format_error"]

GUEST_PREFIX = "<tooliscode>/"
_VALUE = "__tic_value__"
_FLAGS = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, without importing ast for every cell
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE
_sources: dict[str, str] = {}
"""Cell sources by file name, handed to linecache only when a traceback is formatted."""
_LITERAL_START = tuple("'\"0123456789-+[({.") + ("None", "True", "False")
_MAX_NAMES = 300
_DESCRIBED = 30


class FinalAnswer(BaseException):
    """Raised by `final_answer(value)`: ends the cell and hands `value` to the host."""

    def __init__(self, value: Any):
        super().__init__("final answer")
        self.value = value


def _trim(te: traceback.TracebackException, seen: set[int]) -> None:
    if id(te) in seen:
        return
    seen.add(id(te))
    frames = [f for f in te.stack if not f.filename.startswith(GUEST_PREFIX)]
    first_cell = next((i for i, f in enumerate(frames) if f.filename.startswith("<cell-")),
                      len(frames))  # no cell frame (a syntax error): no stack to show
    te.stack = type(te.stack).from_list(frames[first_cell:])
    for nested in (te.__cause__, te.__context__, *(getattr(te, "exceptions", None) or ())):
        if nested is not None:
            _trim(nested, seen)


_NO_MODULES = {"ctypes", "_ctypes", "multiprocessing", "concurrent.futures.thread", "pwd", "grp",
               "termios", "resource", "fcntl", "mmap", "readline", "curses", "tkinter", "ssl",
               "_ssl", "pty", "tty"}
_PROCESS_CALLS = {"fork", "forkpty", "system", "popen", "kill", "killpg", "spawnv", "spawnl",
                  "execv", "execve", "execl", "execle", "execlp", "execvp", "execvpe",
                  "posix_spawn", "posix_spawnp", "wait", "waitpid", "getlogin", "setuid"}
_HINTS = {
    "network": "There is no network in this sandbox: reach outside data through the tools.",
    "process": "There are no processes, signals or threads in this sandbox: do the work in this "
               "interpreter, and use `await asyncio.gather(...)` to run tool calls concurrently.",
    "files": "Only /session (the working directory) is visible: read and write files there.",
    "module": "That module is not available in this sandbox (no C extensions beyond the "
              "standard library's, no threads, processes or network).",
    "memory": "The session's memory limit was reached. Objects still referenced by variables "
              "keep their memory: `del` large ones you no longer need, or work in smaller pieces.",
    "tool": "A failed tool call raises `ToolError`; `except ToolError as e:` catches it.",
    "arguments": "help({tool}) prints the tool in full: its parameters and what they mean.",
    "await": "In async code a tool call returns an awaitable: write `await tool(...)` (or "
             "`await asyncio.gather(...)` over several) to get the values.",
}
_told_tool_error = False
"""Whether a failed tool call was explained already: the first one's error names `ToolError`
(the guide no longer does)."""


OUT_OF_MEMORY = "MemoryError\n[sandbox] " + _HINTS["memory"] + "\n"
"""Built in advance: when memory is gone, there may be none left to build it with."""


def describe_failure(exc: BaseException) -> dict[str, Any]:
    """The result fields for a failed cell. Under memory exhaustion CPython 3.12 sometimes
    fails an allocation with "SystemError: error return without exception set": that is
    reported as the MemoryError it is."""
    if isinstance(exc, SystemError) and "without exception set" in str(exc):
        return {"ok": False, "error": OUT_OF_MEMORY, "error_type": "MemoryError"}
    return {"ok": False, "error": format_error(exc), "error_type": type(exc).__name__}


def sandbox_hint(exc: BaseException) -> str | None:
    """A sentence saying which sandbox rule an error comes from, if it obviously does, or what
    the model needs to know to act on it: how to read a tool's parameters after a bad call,
    that failed calls raise `ToolError` (the first time), to await calls in async code."""
    global _told_tool_error
    if isinstance(exc, MemoryError):  # first: with no memory left, nothing else is tried
        return _HINTS["memory"]
    if isinstance(exc, ToolArgumentError):
        return _HINTS["arguments"].format(tool=str(exc).partition("(")[0] or "tool")
    if isinstance(exc, ToolError) and not _told_tool_error:
        _told_tool_error = True
        return _HINTS["tool"]
    if isinstance(exc, TypeError) and "ToolCallFuture" in str(exc):
        return _HINTS["await"]
    if isinstance(exc, ModuleNotFoundError) and exc.name in _NO_MODULES:
        return _HINTS["module"]
    if isinstance(exc, AttributeError):
        owner = getattr(getattr(exc, "obj", None), "__name__", "")
        if owner in ("_socket", "socket"):
            return _HINTS["network"]
        if owner in ("os", "posix", "signal") and (exc.name in _PROCESS_CALLS or
                                                   owner == "signal"):
            return _HINTS["process"]
    if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        return _HINTS["process"]
    if isinstance(exc, OSError):
        if exc.errno == 58:  # ENOTSUP: sockets and processes
            return _HINTS["network"] if "process" not in str(exc) else _HINTS["process"]
        name = exc.filename if isinstance(exc.filename, str) else ""
        if exc.errno in (44, 63, 2) and (name.startswith("/") and not name.startswith("/session")
                                          or name.startswith("..")):
            return _HINTS["files"]
    return None


def format_error(exc: BaseException) -> str:
    """The traceback with the sandbox's own frames left out, and a hint if a sandbox rule
    is why it failed."""
    import linecache
    import traceback

    for name, source in _sources.items():
        if name not in linecache.cache:
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    try:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
        _trim(te, set())
        hint = sandbox_hint(exc)
        return "".join(te.format()) + (f"[sandbox] {hint}\n" if hint else "")
    except BaseException:  # noqa: BLE001 - a broken __str__, or no memory left to format with
        try:
            return f"{type(exc).__name__}: {exc}\n"
        except BaseException:  # noqa: BLE001
            return f"{type(exc).__name__}: <unprintable exception>\n"


def _short_repr(value: Any, limit: int) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - user objects' __repr__ may raise anything
        text = f"<repr failed: {type(exc).__name__}: {exc}>"
    if len(text) > limit:
        head = text[: limit * 2 // 3]
        tail = text[-(limit // 3):]
        text = f"{head}\n[... {len(text) - len(head) - len(tail):,} characters cut ...]\n{tail}"
    return text


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


def _may_end_in_expression(compiled: Any, code: str) -> bool:
    """Cheap test on the bytecode: could the last statement be an expression? Only then is
    the cell parsed again to keep that expression's value (most cells end otherwise)."""
    if _TAIL is None:  # an interpreter whose bytecode we do not know: always check
        return True
    if compiled.co_exceptiontable:  # handlers are laid out after the end: the tail says nothing
        return True
    if _ends_like_tail(compiled):
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


def _forgotten(names: list[str]) -> str:
    """The warning for tool calls started in async code and never awaited."""
    shown = ", ".join(f"{n}(...)" for n in dict.fromkeys(names))
    many = len(names) > 1
    return (f"RuntimeWarning: {len(names)} tool call{'s' * many} made in async code "
            f"{'were' if many else 'was'} never awaited, so {'their results were' if many else 'its result was'} "
            f"lost ({shown}). " + _HINTS["await"] + "\n")


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

    def reset(self, helpers: dict[str, Any], limits: dict[str, Any]) -> None:
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
        figures.configure(limits)

    def user_names(self) -> list[str]:
        return sorted(k for k in self.ns.keys() - self.baseline
                      if k != "_" and not k.startswith("__"))[:_MAX_NAMES]

    def _loop_for_cell(self) -> Any:
        if self._loop is None or self._loop.is_closed():
            import asyncio

            self._loop = asyncio.new_event_loop()
        return self._loop

    def _execute(self, code: str, filename: str) -> Any:
        compiled = compile(code, filename, "exec", flags=_FLAGS, dont_inherit=True)
        is_async = bool(compiled.co_flags & _CO_COROUTINE)
        patched = None if is_async else _value_kept_in_bytecode(compiled)
        if patched is not None:
            compiled = patched
        elif is_async or _may_end_in_expression(compiled, code):
            compiled = _compile_keeping_value(code, filename)
        self.ns.pop(_VALUE, None)
        if is_async:
            self._loop_for_cell().run_until_complete(eval(compiled, self.ns))
        else:
            exec(compiled, self.ns)
        return self.ns.pop(_VALUE, None)

    def _capture(self, stream: str) -> Capture:
        spill = self._spill_dir
        return Capture(stream, self._output_chars,
                       f"{spill}/cell-{self.count}-{stream}.txt" if spill else None,
                       self._spill_bytes)

    def run(self, code: str) -> dict[str, Any]:
        """Run one cell. The report leaves out what is empty or unchanged (the host keeps the
        last list of names), to keep the common small cell cheap."""
        self.count += 1
        figures.begin(self.count)
        filename = f"<cell-{self.count}>"
        _sources[filename] = code
        out, err = self._capture("stdout"), self._capture("stderr")
        ns = self.ns
        before = {k: id(ns[k]) for k in ns.keys() - self.baseline}
        result: dict[str, Any] = {"ok": True}
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            value = self._execute(code, filename)
            if value is not None:
                ns["_"] = value
                result["value"] = _short_repr(value, self._value_chars)
        except FinalAnswer as fa:
            result["has_final"] = True
            result["final"] = to_json_value(fa.value)
        except BaseException as exc:  # noqa: BLE001 - SystemExit included: the cell just ends
            result.update(describe_failure(exc))
        finally:
            figures.finish(result)  # still captured: matplotlib's warnings are the cell's
            sys.stdout, sys.stderr = saved
            for raw in (sys.__stdout__, sys.__stderr__):
                try:
                    raw.flush()  # C-level and sys.__stdout__ writes reach the host now
                except Exception:  # noqa: BLE001
                    pass
            aio = sys.modules.get("tooliscode_guest.aio")
            forgotten = aio.cancel_all() if aio is not None else []
            if forgotten and result["ok"]:  # a failed cell's error says what to fix first
                err.write(_forgotten(forgotten))
        if out.total:
            result["stdout"] = out.result()
        if err.total:
            result["stderr"] = err.result()
        names = self.user_names()
        if names != self._names:
            result["names"] = self._names = names
        new = [k for k in names if before.get(k) != id(ns.get(k))]
        if new:
            result["new_names"] = new
            if result["ok"] and not out.total and "value" not in result \
                    and not result.get("has_final"):
                result["described"] = {k: describe(ns[k]) for k in new[:_DESCRIBED]}
        return result
