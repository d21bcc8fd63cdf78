"""Turning what the guest reported (untrusted: the cell's code can forge it) into a CellResult."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..guest import MAX_FIGURES, clip, png_size
from ..runtime import GUEST_DIR, GuestTrap
from ._cancel import CANCELLED
from ._command import Command
from ._folder import SNAPSHOT_FILES, Snapshot, changed, read_file, snapshot
from ._limits import Limits
from ._output import OutputStream
from ._result import CellImage, CellResult
from ._rollback import CameBack
from ._tool_calls import CellCalls

__all__ = ["Cell", "build_result", "dropped_result", "restart_notice", "trap_result"]


@dataclass
class Cell:
    """Host-side context of one running cell."""

    calls: CellCalls
    workdir: Path
    started: float
    before: Snapshot | None = None
    """The folder as it was before the cell's first change; None while nothing changed it."""
    output: OutputStream | None = None
    """Where the cell's output goes as it is printed (`Session.run(on_output=...)`)."""

    def changing(self) -> None:
        """Called before the first write by the guest or a tool: the folder is listed only
        for cells that change it."""
        if self.before is None:
            self.before = snapshot(self.workdir)

    def handle(self, op: str, msg: dict[str, Any]) -> dict[str, Any]:
        """The guest's requests while the cell runs (`Requests`): its tool calls, and its
        output as it is printed."""
        if op == "out":
            if self.output is None:
                return {"ok": False, "kind": "protocol", "error": "this cell streams nothing"}
            self.calls.leave_loop()
            return self.output.take(msg)
        return self.calls.handle(op, msg)

    def files_written(self) -> tuple[str, ...]:
        if self.before is None:
            return ()
        after = snapshot(self.workdir)
        self.too_many_files = len(after) >= SNAPSHOT_FILES
        return tuple(changed(self.before, after))

    too_many_files: bool = False
    """The folder held more files than are compared: `files_written` may miss some."""


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


_MAX_NAMES = 300
_NAME_CHARS = 100
_SLACK = 1_000
"""Room for the cut markers the guest adds, when its texts are checked against the limits."""


def _names(value: Any, chars: int = _NAME_CHARS) -> tuple[str, ...]:
    """Names (or notes) the guest listed, bounded here too: a cell's code could forge the
    report."""
    if not isinstance(value, list):
        return ()
    return tuple(v[:chars] for v in value[:_MAX_NAMES] if isinstance(v, str))


def _described(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {k[:_NAME_CHARS]: v[:200] for k, v in list(value.items())[:_MAX_NAMES]
            if isinstance(k, str) and isinstance(v, str)}


_WHAT = {"stdout": "stdout", "stderr": "stderr", "error": "The error's text",
         "value": "The value's repr"}


def _cut_note(name: str, info: Any) -> str | None:
    """The notice for a text the guest cut (`Capture.result()` figures), if it cut it."""
    cut = info.get("cut") if isinstance(info, dict) else None
    if not isinstance(cut, int) or cut <= 0:
        return None
    total = info.get("total")
    saved = info.get("saved")
    where = (f" The full text is in {saved}; read or search it in the next cell."
             if isinstance(saved, str) and info.get("saved_all")
             else f" The first part is in {saved}." if isinstance(saved, str) else "")
    size = f"{total:,}" if isinstance(total, int) else "many"
    return f"{_WHAT[name]} was {size} characters; {cut:,} were cut from the middle." + where


def _bounded(report: dict[str, Any], name: str, limit: int | None, cuts: list[str]) -> str:
    """The guest's text for `name` ("error", "value"), its cut noted in `cuts`; cut here as
    well when it is longer than the guest should have let it be."""
    text = _str(report.get(name))
    note = _cut_note(name, report.get(f"{name}_cut"))
    if limit is not None and len(text) > limit + _SLACK:
        note = note or f"{_WHAT[name]} was {len(text):,} characters; the middle was cut."
        text = clip(text, limit)
    if note:
        cuts.append(note)
    return text


def _raw(command: Command, name: str, limit: int | None, cuts: list[str]) -> str:
    """What the guest wrote straight to the stream's descriptor (C code, `os.write`), which
    no `Capture` saw: cut here to the same limit."""
    raw = command.raw_text(name)
    if limit is not None and len(raw) > limit:
        cuts.append(f"{name} written straight to its descriptor was {len(raw):,} characters "
                    "or more; the middle was cut and not saved.")
        raw = clip(raw, limit)
    return raw


def _stream(report: Any, command: Command, name: str, limit: int | None,
            cuts: list[str]) -> str:
    """The stream's text; when it was cut, the notice saying so is added to `cuts`."""
    info = report if isinstance(report, dict) else {}
    note = _cut_note(name, info)
    if note:
        cuts.append(note)
    return _str(info.get("text")) + _raw(command, name, limit, cuts)


_NOTE_CHARS = 500
_UNLIMITED_IMAGE_BYTES = 64 * 1024 * 1024
"""Read at most this much of one image even when `Limits.image_bytes` is None."""


def _images(report: dict[str, Any], workdir: Path, limits: Limits,
            notices: list[str]) -> tuple[CellImage, ...]:
    """The PNGs the guest says it saved, read here and checked again: the report could name
    any file in the folder, and a cell can rewrite a file after it was saved."""
    notes = report.get("figure_notes")
    notices.extend(_names(notes, _NOTE_CHARS)[:MAX_FIGURES * 2])
    listed = report.get("images")
    found: dict[str, CellImage] = {}
    cap = limits.image_bytes if limits.image_bytes is not None else _UNLIMITED_IMAGE_BYTES
    for entry in listed[:MAX_FIGURES] if isinstance(listed, list) else ():
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str) or entry.get("fits") is False:
            continue
        rel = path[len(GUEST_DIR) + 1:] if path.startswith(GUEST_DIR + "/") else path
        try:
            data = read_file(workdir, rel, cap + 1)
        except (OSError, ValueError):
            continue
        size = png_size(data)
        pixels = limits.image_pixels
        if size is None or len(data) > cap or (pixels is not None and size[0] * size[1] > pixels):
            notices.append(f"{rel} is not a PNG within the image limits: listed, not shown.")
            continue
        found[rel] = CellImage(rel, data, "image/png", size[0], size[1])
    return tuple(found.values())


def _written(cell: Cell, notices: list[str]) -> tuple[str, ...]:
    written = cell.files_written()
    if cell.too_many_files and written:
        notices.append(f"The session folder holds more than {SNAPSHOT_FILES:,} files and only "
                       "that many were compared: this cell may have written more than listed.")
    return written


def restart_notice(lost: tuple[str, ...]) -> str:
    names = ", ".join(lost[:40]) + (" ..." if len(lost) > 40 else "")
    gone = f" ({names})" if names else ""
    return ("The Python interpreter was restarted: variables, functions and imports from "
            f"earlier cells are gone{gone}. Files in /session were kept.")


def build_result(command: Command, report: Any, lost: tuple[str, ...] | None,
                 workdir: Path, names: tuple[str, ...] = ()) -> CellResult:
    """`names` are the guest's names before the cell: the report has "names" only when they
    changed."""
    cell: Cell = command.ctx
    report = report if isinstance(report, dict) else {}
    notices: list[str] = list(command.notices)
    if lost is not None:
        notices.append(restart_notice(lost))
    cuts: list[str] = []
    limits = cell.calls.limits
    stdout = _stream(report.get("stdout"), command, "stdout", limits.output_chars, cuts)
    stderr = _stream(report.get("stderr"), command, "stderr", limits.output_chars, cuts)
    ok = report.get("ok") is True
    value = _bounded(report, "value", limits.value_chars, cuts) \
        if isinstance(report.get("value"), str) else None
    error = None if ok else (_bounded(report, "error", limits.output_chars, cuts)
                             or "the cell failed")
    notices += cuts
    images = _images(report, workdir, limits, notices) if "images" in report or \
        "figure_notes" in report else ()
    left_out = report.get("new_names_left_out")
    written = _written(cell, notices)
    return CellResult(
        ok=ok, stdout=stdout, stderr=stderr, value=value, error=error,
        error_type=None if ok else (_str(report.get("error_type"))[:_NAME_CHARS] or None),
        tool_calls=tuple(cell.calls.records), duration_s=time.perf_counter() - cell.started,
        restarted=lost is not None, lost_names=lost or (),
        names=_names(report["names"]) if "names" in report else names,
        new_names=_names(report.get("new_names")),
        new_names_left_out=left_out if isinstance(left_out, int) and left_out > 0 else 0,
        described=_described(report.get("described")),
        truncated=" ".join(cuts) or None,
        files_written=written, final=report.get("final"),
        has_final=report.get("has_final") is True, notices=tuple(notices), images=images)


_TRAP_TEXT = {
    "timeout": "TimeoutError: the cell was still running after {t} and was stopped.",
    "cancelled": "CancelledError: the cell was cancelled after {ran}.",
    "stack": "RecursionError: the code recursed so deeply that the interpreter ran out of stack "
             "(after {ran}).",
    "exit": "SystemExit: the interpreter itself exited (after {ran}).",
    "abandoned": "The interpreter was stopped after {ran}.",
}
_TRAP_TYPE = {"timeout": "TimeoutError", "stack": "RecursionError", "cancelled": "CancelledError"}


def _calls_made(cell: Cell) -> str:
    """The stopped cell's tool calls, whose effects happened in the world."""
    made = [record.name for record in cell.calls.records]
    running = cell.calls.unfinished()
    text = f" Before it stopped, it had made {_counted(made)}: their effects stand." \
        if made else ""
    if running:
        text += (f" {_counted(running).capitalize()} still running then "
                 f"{'was' if len(running) == 1 else 'were'} cancelled or left to finish: "
                 "their effects may have happened too.")
    return text


def _counted(names: list[str]) -> str:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    listed = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in list(counts.items())[:20])
    return f"{len(names)} tool call{'s' if len(names) != 1 else ''} ({listed})"


def trap_result(command: Command, trap: GuestTrap, came: CameBack, limits: Limits,
                workdir: Path) -> CellResult:
    """A cell that was stopped: what stopped it and when, what it did that stands (its tool
    calls, its files), and what the session holds now (`came`)."""
    cell: Cell = command.ctx
    ran_s = time.perf_counter() - cell.started
    t = f"{limits.timeout_s:g} s" if limits.timeout_s is not None else "its time limit"
    head = _TRAP_TEXT.get(trap.reason, "").format(t=t, ran=f"{ran_s:.2f} s") \
        or f"The interpreter crashed after {ran_s:.2f} s: {trap.message}."
    if trap.reason == "cancelled" and trap.message != CANCELLED:  # who cancelled it, and why
        head = f"{head[:-1]} ({trap.message})."
    extra: list[str] = []
    written = _written(cell, extra)
    files = (" The files it wrote in /session (listed below) are kept: the folder is not "
             "rolled back." if written else "")
    state = came.text()
    stdout = _raw(command, "stdout", limits.output_chars, extra)
    stderr = _raw(command, "stderr", limits.output_chars, extra)
    rolled = came.exact is not None or not came.lost  # none lost: as it was, too
    return CellResult(
        ok=False, stdout=stdout, stderr=stderr,
        error=f"{head}{_calls_made(cell)}{files} {state}",
        error_type=_TRAP_TYPE.get(trap.reason, "GuestCrash"),
        tool_calls=tuple(cell.calls.records), duration_s=ran_s,
        restarted=not rolled and bool(came.lost), rolled_back=rolled,
        lost_names=tuple(came.missing) if rolled else came.lost, files_written=written,
        notices=(*command.notices, state, *extra))


def dropped_result(command: Command, trap: GuestTrap, names: tuple[str, ...]) -> CellResult:
    """A cell that never started (`Worker.drop`): cancelled while it waited for the guest, or
    still waiting when its time was up (the guest busy keeping the last cell's state)."""
    waited = time.perf_counter() - command.ctx.started
    if trap.reason == "timeout":
        head, kind = (f"TimeoutError: the cell had not started after {waited:.1f} s: the "
                      "interpreter was still keeping the state of the cell before."), \
            "TimeoutError"
    else:
        why = f" ({trap.message})" if trap.message != CANCELLED else ""
        head, kind = f"CancelledError: the cell was cancelled before it started{why}.", \
            "CancelledError"
    return CellResult(
        ok=False, error=f"{head} None of it ran: the session is as it was.", error_type=kind,
        duration_s=waited, names=names, notices=tuple(command.notices))
