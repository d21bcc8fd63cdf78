"""What the model reads when a cell fails.

The traceback leaves out the sandbox's own frames, shows the cell's line for every syntax
error (the compiler's own errors carry none), adds a hint when a sandbox rule is why, and is
bounded as printed output is: past the limit, each message is cut to its head and tail so
that every frame and exception type stays readable, and the whole text is saved in the
session folder.
"""

from __future__ import annotations

import itertools
import sys

from .capture import Capture, clip
from .tools import ToolArgumentError, ToolError
from .tracebacks import cut_down

TYPE_CHECKING = False
if TYPE_CHECKING:
    import traceback
    from typing import Any

    from .tracebacks import Cuts

__all__ = ["GUEST_PREFIX", "OUT_OF_MEMORY", "message_chars", "describe_failure", "format_error", "sandbox_hint",
           "remember_source", "sources", "set_python_note", "unawaited"]

GUEST_PREFIX = "<tooliscode>/"
ERROR_CHARS = 20_000
"""The bound where the session gave none (an error outside a cell)."""
sources: dict[str, str] = {}
"""Cell sources by file name, handed to linecache only when a traceback is formatted."""
_python_note = "this Python's standard library"
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
    "parser": "This is Python's stack limit, not the memory limit: the code nests or recurses "
              "too deeply (here through eval, exec or compile). Make it shallower, or iterative.",
    "tool": "A failed tool call raises `ToolError`; `except ToolError as e:` catches it.",
    "arguments": "help({tool}) prints the tool in full: its parameters and what they mean.",
    "await": "In async code a tool call returns an awaitable: write `await tool(...)` (or "
             "`await asyncio.gather(...)` over several) to get the values.",
}
_told_tool_error = False
"""Whether a failed tool call was explained already: the first one's error names `ToolError`
(the guide does not)."""
_SITE_ADVICE = ". Site initialization is disabled"
"""How CPython 3.15 starts its advice for a missing module: site-packages and virtual
environments, neither of which the code can do anything about here."""


OUT_OF_MEMORY = "MemoryError\n[sandbox] " + _HINTS["memory"] + "\n"
"""Built in advance: when memory is gone, there may be none left to build it with."""


def message_chars(limit: int) -> int:
    """How much of one message a traceback longer than `limit` keeps: a quarter of it, so
    that several messages fit beside the frames. A tool's message is cut to it on the host."""
    return max(200, limit // 4)


def set_python_note(note: str | None) -> None:
    """Which Python and packages this sandbox has, in words (the host's `python_note`)."""
    global _python_note
    if note:
        _python_note = note


def remember_source(filename: str, source: str) -> None:
    sources[filename] = source


def describe_failure(exc: BaseException, out: Capture | None = None) -> dict[str, Any]:
    """The result fields for a failed cell, its text bounded by `out` (a default bound when
    None). Under memory exhaustion CPython 3.12 sometimes fails an allocation with
    "SystemError: error return without exception set": that is reported as the MemoryError
    it is."""
    if isinstance(exc, SystemError) and "without exception set" in str(exc):
        return {"ok": False, "error": OUT_OF_MEMORY, "error_type": "MemoryError"}
    shown = format_error(exc, out or Capture("error", ERROR_CHARS, None, 0))
    result = {"ok": False, "error": shown.pop("text"), "error_type": type(exc).__name__}
    if shown.get("cut"):
        result["error_cut"] = shown
    return result


def _module_hint(exc: ModuleNotFoundError) -> str | None:
    name = exc.name or ""
    top = name.partition(".")[0]
    if name in _NO_MODULES or top in getattr(sys, "stdlib_module_names", ()):
        return _HINTS["module"]
    if top != name:
        import importlib.util

        try:
            if importlib.util.find_spec(top) is not None:
                return None  # the package is here, without that module: Python says so
        except (ImportError, ValueError):
            pass
    return (f"No package {top!r} is in this sandbox, and none can be installed (there is no "
            f"pip and no network). What it has: {_python_note}. Modules of your own can be "
            "imported from .py files in /session.")


def sandbox_hint(exc: BaseException) -> str | None:
    """A sentence saying which sandbox rule an error comes from, if it obviously does, or what
    the model needs to know to act on it: how to read a tool's parameters after a bad call,
    that failed calls raise `ToolError` (the first time), to await calls in async code."""
    global _told_tool_error
    if isinstance(exc, MemoryError):  # first: with no memory left, nothing else is tried
        return _HINTS["parser"] if "stack overflow" in str(exc).lower() else _HINTS["memory"]
    if isinstance(exc, ToolArgumentError):
        return _HINTS["arguments"].format(tool=str(exc).partition("(")[0] or "tool")
    if isinstance(exc, ToolError) and not _told_tool_error:
        _told_tool_error = True
        return _HINTS["tool"]
    if isinstance(exc, TypeError) and "ToolCallFuture" in str(exc):
        return _HINTS["await"]
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return _module_hint(exc)
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


def unawaited(names: list[str]) -> str:
    """The warning for tool calls started in async code and never awaited."""
    shown = ", ".join(f"{n}(...)" for n in dict.fromkeys(names))
    many = len(names) > 1
    return (f"RuntimeWarning: {len(names)} tool call{'s' * many} made in async code "
            f"{'were' if many else 'was'} never awaited, so "
            f"{'their results were' if many else 'its result was'} lost ({shown}). "
            + _HINTS["await"] + "\n")


def _cut_stack(kept: list[Any], at: int, omitted: int) -> Any:
    """A StackSummary that says where `omitted` frames were left out (before index `at`)."""
    from traceback import StackSummary

    class CutStack(StackSummary):
        def format(self, **kwargs: Any) -> list[str]:
            head = StackSummary.from_list(self[:at]).format(**kwargs)
            tail = StackSummary.from_list(self[at:]).format(**kwargs)
            return [*head, f"  [... {omitted:,} frames left out ...]\n", *tail]

    return CutStack(kept)  # not `from_list`: it makes a plain StackSummary


def _trim(te: traceback.TracebackException, exc: BaseException | None, cuts: Cuts,
          seen: set[int]) -> None:
    """Leave out the sandbox's frames (and, for each exception, what precedes the first cell
    frame); mark where a deep stack was cut. `exc` is the exception `te` was made from."""
    if id(te) in seen:
        return
    seen.add(id(te))
    cut = cuts.stacks.get(id(exc)) if exc is not None else None
    mark = te.stack[cut[0]] if cut and cut[0] < len(te.stack) else None
    frames = [f for f in te.stack if not f.filename.startswith(GUEST_PREFIX)]
    first_cell = next((i for i, f in enumerate(frames) if f.filename.startswith("<cell-")),
                      len(frames))  # no cell frame (a syntax error): no stack to show
    frames = frames[first_cell:]
    at = next((i for i, f in enumerate(frames) if f is mark), None) if cut else None
    te.stack = _cut_stack(frames, at, cut[1]) if at is not None and cut else \
        type(te.stack).from_list(frames)
    members = itertools.zip_longest(getattr(te, "exceptions", None) or (),
                                    getattr(exc, "exceptions", None) or ())
    for nested, original in ((te.__cause__, getattr(exc, "__cause__", None)),
                             (te.__context__, getattr(exc, "__context__", None)), *members):
        if nested is not None:
            _trim(nested, original, cuts, seen)


def _fill_source_line(exc: BaseException) -> None:
    """Errors the compiler finds after parsing (`break` outside a loop) name a line of the
    cell but carry no text: CPython would read it from the file, and a cell has none."""
    if isinstance(exc, SyntaxError) and exc.text is None and isinstance(exc.lineno, int):
        source = sources.get(exc.filename) if isinstance(exc.filename, str) else None
        lines = source.splitlines() if source is not None else ()
        if 0 < exc.lineno <= len(lines):
            exc.text = lines[exc.lineno - 1] + "\n"


def _clip_messages(te: traceback.TracebackException, limit: int, seen: set[int]) -> None:
    """Cut every message of `te` and the exceptions it holds to `limit` characters."""
    if id(te) in seen:
        return
    seen.add(id(te))
    for name in ("_str", "msg", "text"):
        value = getattr(te, name, None)
        if isinstance(value, str) and len(value) > limit:
            setattr(te, name, clip(value, limit))
    notes = getattr(te, "__notes__", None)
    if isinstance(notes, (list, tuple)):
        te.__notes__ = [clip(n, limit) if isinstance(n, str) else n for n in notes]
    for nested in (te.__cause__, te.__context__, *(getattr(te, "exceptions", None) or ())):
        if nested is not None:
            _clip_messages(nested, limit, seen)


def _write(te: traceback.TracebackException, out: Capture, hint: str | None) -> None:
    for chunk in te.format():
        out.write(chunk)
    if hint:
        out.write(f"[sandbox] {hint}\n")


def _traceback(exc: BaseException, cuts: Cuts, shown: BaseException) -> Any:
    import linecache
    import traceback

    for name, source in sources.items():
        if name not in linecache.cache:
            lines = source.splitlines(True)
            if lines and not lines[-1].endswith("\n"):  # else 3.12 puts carets one column off
                lines[-1] += "\n"
            linecache.cache[name] = (len(source), None, lines, name)
    te = traceback.TracebackException(type(shown), shown, shown.__traceback__, compact=True)
    _trim(te, shown, cuts, set())
    if isinstance(exc, ModuleNotFoundError) and isinstance(getattr(te, "_str", None), str):
        te._str = te._str.partition(_SITE_ADVICE)[0]
    return te


def format_error(exc: BaseException, out: Capture) -> dict[str, Any]:
    """The traceback, written into `out`; returns `out.result()` ("text", "total", "cut" and
    where the whole text was saved). When it is longer than `out.limit`, the text shown is
    made again with each message cut to its head and tail."""
    try:
        _fill_source_line(exc)
        shown, cuts = cut_down(exc)
        try:
            te = _traceback(exc, cuts, shown)
        finally:
            cuts.undo()
        hint = sandbox_hint(exc)
        _write(te, out, hint)
        if not out.overflowed or out.limit is None:
            return out.result()
        whole = out.result()
        _clip_messages(te, message_chars(out.limit), set())
        short = Capture(out.name, out.limit, None, 0)
        _write(te, short, hint)
        text = short.result()["text"]
        return {**whole, "text": text, "cut": max(0, whole["total"] - len(text))}
    except BaseException:  # noqa: BLE001 - a broken __str__, or no memory left to format with
        try:
            text = f"{type(exc).__name__}: {clip(str(exc), out.limit)}\n"
        except BaseException:  # noqa: BLE001
            text = f"{type(exc).__name__}: <unprintable exception>\n"
        return {"text": text, "total": len(text), "cut": 0}
