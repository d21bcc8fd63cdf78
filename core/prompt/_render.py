"""What the model reads back after running code: the cell's result, and notices about the run.

Every front end (ToolIsCode, the framework adapters, the MCP proxy, text mode, the REPL) gets
its text from here, so a notice reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..engine import CellResult
from ._images import images_line

__all__ = ["EVICTED", "REPLACED", "failed_to_run", "not_run", "note", "noted", "render"]

EVICTED = ("This conversation's earlier Python session was closed after {reason}; this is a "
           "new one: earlier variables, imports and files are gone.")
"""The notice for a conversation whose interpreter was closed while it was away."""

REPLACED = ("The tools changed, so a new Python interpreter was started: earlier variables, "
            "functions and imports are gone.")
"""The notice for a conversation whose interpreter was replaced to take a new tool set."""

_NO_OUTPUT = "(the cell ran and printed nothing"
_SHOWN_NAMES = 30
_SHOWN_FILES = 20
_PATH_CHARS = 200


def note(notice: str) -> str:
    """One notice, as the model reads it."""
    return f"[note] {notice}"


def noted(text: str, notices: Iterable[str | None]) -> str:
    """`text` after the notices that are set, one line each."""
    lines = [note(n) for n in notices if n]
    return "\n".join([*lines, text]) if lines else text


def not_run(why: str) -> str:
    """What the model reads when the code was cancelled before it started (a time limit
    that ran out while it waited for its interpreter, say)."""
    return f"[error] the code did not run: {why}"


def failed_to_run(exc: BaseException) -> str:
    """What the model reads when the sandbox itself failed (the code may not have run)."""
    return f"[error] the sandbox could not run the code: {type(exc).__name__}: {exc}"


def _defined(result: CellResult, reprs: Mapping[str, str] | None) -> str:
    names = list(result.new_names[:_SHOWN_NAMES])
    if not names:
        return "; it defined no new names)"
    shown = [f"{n} = {reprs[n]}" if reprs and n in reprs else n for n in names]
    more = len(result.new_names) - len(names) + result.new_names_left_out
    return "; it defined: " + ", ".join(shown) + (f" and {more:,} more)" if more > 0 else ")")


def render(result: CellResult, reprs: Mapping[str, str] | None = None) -> str:
    """What the model reads after a cell: notices, output, value, error, files, images. Never
    empty.

    `reprs` maps names the cell defined to short descriptions, shown when nothing was printed;
    by default the ones the guest made (`result.described`).
    """
    if result.paused:
        return "\n".join([*(note(n) for n in result.notices), _paused(result)])
    if reprs is None:
        reprs = result.described
    parts: list[str] = [note(n) for n in result.notices
                        if not (result.error and n in result.error)]
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append(f"[stderr]\n{result.stderr.rstrip()}")
    if result.value is not None:
        parts.append(f"[value] {result.value}")
    if result.error:
        parts.append(f"[error]\n{result.error.rstrip()}")
    if result.has_final:
        parts.append(f"[final answer] {_brief(result.final)}")
    if result.files_written:
        shown = ", ".join(_brief(p, _PATH_CHARS) for p in result.files_written[:_SHOWN_FILES])
        more = len(result.files_written) - _SHOWN_FILES
        parts.append(f"[files written in /session] {shown}"
                     + (f" and {more:,} more" if more > 0 else ""))
    if result.images:
        parts.append(images_line(result) or "")
    silent = not (result.stdout or result.stderr or result.value is not None or result.error
                  or result.has_final)
    if silent:
        parts.insert(0, _NO_OUTPUT + _defined(result, reprs))
    return "\n".join(parts)


def _paused(result: CellResult) -> str:
    calls = "\n".join(f"- {p.tool}({_brief(p.arguments, 200)}) [{p.id}]" for p in result.paused)
    return ("[paused] The cell has not ended: it waits for decisions on these calls, and goes "
            f"on once they are made:\n{calls}")


def _brief(value: Any, limit: int = 500) -> str:
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit:,} more characters]"
