"""`Session`: one live guest interpreter, its tools, its folder and its limits."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import functools
import logging
import threading
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._closing import Closing
from .._folders import empty_folder
from ..errors import SessionClosed, SnapshotError
from ..runtime import GUEST_DIR, Runtime, resolve_runtime
from ..tools import ToolRegistry, guest_spec, search_entry
from ._cancel import Cancel
from ._command import Command, Requests
from ._folder import INTERNAL_DIR, OUTPUT, FileInfo, list_files, read_file
from ._limits import Limits
from ._live import EXIT_WAIT_S, GuestHold, live, pool_for
from ._output import OnOutput, OutputStream, check_on_output
from ._parked import Parked
from ._pause import CellLog, Decision, PendingCall
from ._result import CellResult
from ._rollback import CameBack, Rollback
from ._running import CellRunner, Steer, stop_cell
from ._snapshot import SessionState, capture
from ._worker import Worker

log = logging.getLogger("tooliscode")

__all__ = ["Session"]

_MAX_FOUND = 50
"""Most tools one `search_tools` call returns, whatever limit the code asks for."""
_QUERY_CHARS = 1_000

class Session(CellRunner, Closing):
    """A stateful Python sandbox whose code can call `tools`.

    Variables, functions and imports persist from one `run` to the next. The session
    folder (`workdir`) is the guest's working directory, `/session`; it is deleted on
    `close()` unless you passed your own.
    """

    def __init__(self, tools: Iterable[Any] | ToolRegistry = (), *, limits: Limits | None = None,
                 workdir: str | Path | None = None, runtime: Runtime | str | None = None,
                 state: SessionState | None = None, _ahead: bool = False):
        """`state`: start from a checked snapshot (`SessionState.open`; `Session.restore`
        does both). `_ahead`: made ahead of need (a code tool's spare), so its guest, if
        made here, leaves the runtime's slots to guests wanted now (`GuestSpec.ahead`)."""
        self.limits = limits or Limits()
        self.registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.runtime = resolve_runtime(runtime)
        self._turn = threading.Lock()
        self._names: tuple[str, ...] = ()
        self._lost: tuple[str, ...] | None = None
        self._setup: dict[str, Any] | None = None
        self._setup_reply: cf.Future | None = None
        self._closed = False
        self._notices: list[str] = []
        """Told with the next cell's result (a restore, say)."""
        self._state_first = state if state is not None and state.memory is not None else None
        """A saved interpreter goes into the first guest before it runs at all."""
        self._first_reply: Any = None
        self._parked: Parked | None = None
        """The cell paused at calls waiting for decisions, if one is."""
        self._running: tuple[Worker, Command] | None = None
        """The guest and command of the cell being waited for (for `cancel`)."""
        self._dead: Worker | None = None
        self._stopped: str | None = None
        """A guest given up outside any result (a cancelled task): the next guest comes back
        to its point, and the next result says why."""
        if workdir is None:
            worker = pool_for(self.runtime).acquire(self.limits, ahead=_ahead)
            self._state = GuestHold(None, worker.workdir, True)
        else:
            folder = Path(workdir).resolve()
            folder.mkdir(parents=True, exist_ok=True)
            self._state = GuestHold(None, folder, False)
            worker = Worker(self.runtime, folder, self.limits, ahead=_ahead)
        self._finalizer = weakref.finalize(self, self._state.release)
        self._attach(worker)
        live.add(self)
        if state is not None:
            try:
                with self._turn:
                    self._loaded(state, self._ensure_worker())
            except BaseException:
                self.close()
                raise

    # -- public API ---------------------------------------------------------------------

    @property
    def workdir(self) -> Path:
        """The session folder on the host."""
        return self._state.workdir

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def names(self) -> tuple[str, ...]:
        """Global names the guest held after the last cell."""
        return self._names

    def run(self, code: str, *, call_id: str | None = None, log: CellLog | None = None,
            decisions: Mapping[str, Decision] | None = None,
            on_output: OnOutput | None = None, cancel: Cancel | None = None) -> CellResult:
        """Run one cell and return what it did. Blocks until the cell ends, or pauses at
        calls that wait for decisions (`result.paused`; continue with `resume`).

        `call_id` names the code tool's call the cell runs for: its calls are
        `<call_id>:<n>` and each is logged. `log` continues a cell paused elsewhere: its calls
        are answered from it, each checked to be the same call, with `decisions` for the
        calls it waited on.

        `on_output(stream, text)` gets the cell's stdout and stderr as they are printed
        ("stdout" or "stderr", and a chunk of it), in the order written, before `run`
        returns. A callback rather than an iterator: a cell is one call that returns one
        result, and every front end forwards chunks by calling its framework's own writer.
        Here it is called on the guest's thread, while the cell waits for it (so nothing
        piles up): keep it quick, and do not call this session from it. Chunks end at line
        ends; lines go one by one, or, while a cell prints faster, together at least every
        10 ms; a partial line goes once it waited 10 ms (at once with `flush=True`), and
        whatever waits goes before a tool call or a sleep. Two things wait longer, for the
        next write, loop pass, branch or call: output that waits while one long call into C
        code runs (a big sort, a regex, numpy), and a partial line written with
        `sys.stdout.write` and neither ended nor flushed (as on a terminal); the guest has
        one thread, and its memory cannot be read from the host. A cell streams
        `Limits.stream_chars` characters at most, then one notice. The result still has the
        bounded whole. A callback that raises is
        logged and not called again for that cell; the cell runs on. A cell that pauses
        (`result.paused`) streams until it pauses; what it prints once resumed is in the
        result of `resume`.

        `cancel` (a `Cancel`) stops this cell when called, from any thread, as `cancel()`
        does, but only this one: fired before the cell starts, it stops the cell as it
        starts; fired after the cell ended, it touches nothing."""
        self._check_open()
        check_on_output(on_output, blocking=True)
        with self._turn:
            self._give_up_paused()
            output = OutputStream(on_output, self.limits.stream_chars) if on_output else None
            try:
                return self._run(code, None, Steer(call_id, log, decisions, output, cancel))
            finally:
                if output is not None:
                    output.close()

    async def arun(self, code: str, *, call_id: str | None = None, log: CellLog | None = None,
                   decisions: Mapping[str, Decision] | None = None,
                   on_output: OnOutput | None = None,
                   cancel: Cancel | None = None) -> CellResult:
        """`run` without blocking the event loop; async tools run on this loop.

        `on_output` is called on this loop, by one task, in order; when it returns an
        awaitable, that is awaited before the next chunk. While more than about a million
        characters wait for it, the cell waits too. Every chunk has been handled when
        `arun` returns."""
        self._check_open()
        check_on_output(on_output, blocking=False)
        if not self._turn.acquire(blocking=False):
            await asyncio.to_thread(self._turn.acquire)
        output: OutputStream | None = None
        try:
            if self._parked is not None:
                await asyncio.to_thread(self._give_up_paused)
            loop = asyncio.get_running_loop()
            if on_output is not None:
                output = OutputStream(on_output, self.limits.stream_chars, loop)
            result = await self._arun(code, loop, Steer(call_id, log, decisions, output,
                                                              cancel))
            if output is not None:
                await output.drain()
            return result
        finally:
            if output is not None:
                output.close()
            self._turn.release()

    def cancel(self, why: str | None = None) -> bool:
        """Stop the running cell, from any thread: its tool calls are cancelled (a sync
        tool's thread is left to finish on its own), and the session comes back to its state
        before the cell, in a new guest. The cell's result says so, and `why` when given.
        A cell still waiting for the guest never runs, and the session is left as it is.
        False when no cell ran. (To stop only the cell of one call, pass `run` a `Cancel`.)"""
        running = self._running
        return running is not None and stop_cell(*running, why) != "ended"

    @property
    def running(self) -> bool:
        """Whether a cell runs in the guest now, from any thread: taken by the guest and not
        ended (a cell still waiting for the guest, behind the last cell's rollback point, is
        not running yet: a cancel then drops it)."""
        running = self._running
        return running is not None and running[1].started and not running[1].future.done()

    @property
    def paused(self) -> tuple[PendingCall, ...]:
        """The calls the paused cell waits on (empty when no cell is paused)."""
        parked = self._parked
        return parked.pending if parked is not None else ()

    @property
    def paused_for(self) -> str | None:
        """The code tool call (`run(call_id=...)`) whose cell is paused, if one is."""
        parked = self._parked
        return parked.command.ctx.calls.outer_id if parked is not None else None

    def paused_log(self) -> CellLog | None:
        """The paused cell as a log to continue it in another process (`run(log=...)`)."""
        parked = self._parked
        return parked.log(self.limits.pause_s) if parked is not None else None

    def resume(self, decisions: Mapping[str, Decision]) -> CellResult:
        """Continue the paused cell with `decisions` (by call id): it runs until it ends or
        pauses again. Calls left undecided keep it paused."""
        self._check_open()
        with self._turn:
            return self._continue(self._take_parked(), decisions, None)

    async def aresume(self, decisions: Mapping[str, Decision]) -> CellResult:
        """`resume` without blocking the event loop; async tools run on this loop."""
        self._check_open()
        if not self._turn.acquire(blocking=False):
            await asyncio.to_thread(self._turn.acquire)
        try:
            return await self._acontinue(self._take_parked(), decisions,
                                         asyncio.get_running_loop())
        finally:
            self._turn.release()

    def snapshot(self, *, key: bytes | str | None = None) -> bytes:
        """The session's whole state as bytes (variables, what the cells defined, imports,
        the folder's files), for `Session.restore` in any process. Waits for a running cell.

        On the data runtime it is the interpreter itself (its memory, as a delta against the
        start image): everything comes back exactly, generators and random state included.
        Signed with `key` (or `TOOLISCODE_SNAPSHOT_KEY`) when given."""
        self._check_open()
        with self._turn:
            worker = self._ensure_worker()
            return capture(worker, self.runtime, self.workdir, self._names, key)

    @classmethod
    def restore(cls, blob: bytes, tools: Iterable[Any] | ToolRegistry = (), *,
                limits: Limits | None = None, workdir: str | Path | None = None,
                runtime: Runtime | str | None = None, key: bytes | str | None = None,
                announce: bool = True) -> Session:
        """A live session with the state `blob` holds; the tools are given again (they are
        host objects, not state). A damaged, foreign or tampered snapshot raises
        `SnapshotError` before anything of it runs, as is an exact (data-runtime) snapshot
        whose start image this machine does not have. The next result tells the model what
        could not come along (and, with `announce`, that the session was restored)."""
        runtime = resolve_runtime(runtime)
        limits = limits or Limits()
        state = SessionState.open(blob, runtime, limits.memory_bytes, key, announce=announce)
        return cls(tools, limits=limits, workdir=workdir, runtime=runtime, state=state)

    def load(self, blob: bytes, *, key: bytes | str | None = None) -> bool:
        """Load a snapshot of variables into this session's live guest rather than a new one
        (a conversation come back to a worker that still has its interpreter: no new guest
        to boot). Its cells' state is forgotten and its folder emptied first, so what remains
        is the snapshot's, and the next result names what could not come along. False, with
        nothing done, for a saved interpreter (an exact snapshot): that one needs a new
        guest (`Session.restore`)."""
        self._check_open()
        state = SessionState.open(blob, self.runtime, self.limits.memory_bytes, key,
                                  announce=False)
        if state.memory is not None:
            return False
        with self._turn:
            worker = self._ensure_worker()
            reply = worker.call({"op": "reset"})
            if not isinstance(reply, dict) or not reply.get("ok"):
                raise SnapshotError(f"the guest could not forget its state: {reply}")
            self._names = ()
            if not empty_folder(self.workdir):
                raise SnapshotError("the session folder could not be emptied for the snapshot's")
            self._loaded(state, worker)
        return True

    def reset(self) -> None:
        """Forget every variable, function and import; tools and files stay."""
        self._check_open()
        with self._turn:
            worker = self._ensure_worker()
            worker.call({"op": "reset"})
            self._names = ()

    def files(self) -> list[FileInfo]:
        """Files in the session folder (symlinks are listed, never followed)."""
        return list_files(self._folder())

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """Read a file the guest wrote; `path` is relative or under /session."""
        return read_file(self._folder(), path, max_bytes)

    def write_file(self, path: str, data: bytes | str) -> None:
        """Put a file into the session folder for the guest to read."""
        folder = self._folder()
        target = folder.joinpath(*Path(path).parts).resolve()
        if folder not in target.parents:
            raise ValueError(f"not a path inside the session folder: {path!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def close(self, wait: bool = False) -> None:
        """Stop the guest and free its thread, memory and (if ours) folder, or give an idle
        guest back to the pool it came from, renewed with its folder emptied, for the next
        session (`WarmPool.give_back`).

        Returns at once: the guest ends (or is renewed) on its own thread, which then removes
        the folder (exit waits for that). `wait=True` returns only once the guest is gone (or
        back)."""
        back = None
        if not self._closed:
            self._closed = True
            parked, self._parked = self._parked, None
            if parked is not None:  # its thread waits in the host: let it go, so it can stop
                parked.give_up("the session was closed")
            live.discard(self)
            worker = self._state.worker
            self._finalizer.detach()
            idle = parked is None and self._turn.acquire(blocking=False)
            try:  # an idle guest may go back to the pool it came from (`WarmPool.give_back`)
                back = self._state.release(idle=idle)
            finally:
                if idle:
                    self._turn.release()
        else:
            worker = None
        if wait and back is not None:
            cf.wait([back], EXIT_WAIT_S)
        elif wait and worker is not None:
            worker.join(EXIT_WAIT_S)

    # -- internals ----------------------------------------------------------------------

    def _loaded(self, state: SessionState, worker: Worker) -> None:
        """Load `state` into the guest (under the turn lock) and note what the model must be
        told about it."""
        missing, self._names = state.load(worker, self.workdir, self._first_reply)
        notice = state.notice(missing)
        if notice:
            self._notices.append(notice)

    def _folder(self) -> Path:
        """The session folder, while it is this session's: a folder of our own is removed, or
        emptied for the next session, once the session is closed (one of the caller's is
        theirs to read)."""
        if self._closed and self._state.owns_workdir:
            raise SessionClosed("this session is closed: its folder is gone")
        return self.workdir

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed("this session is closed")

    def _setup_message(self) -> dict[str, Any]:
        if self._setup is None:
            limits = {"output_chars": self.limits.output_chars,
                      "value_chars": self.limits.value_chars,
                      "spill_bytes": self.limits.spill_bytes,
                      "spill_dir": f"{GUEST_DIR}/{OUTPUT}",
                      "image_bytes": self.limits.image_bytes,
                      "image_pixels": self.limits.image_pixels,
                      "figure_dir": f"{GUEST_DIR}/figures",
                      "python_note": self.runtime.python_note,
                      "mpl_config_dir": f"{GUEST_DIR}/{INTERNAL_DIR}/matplotlib"}
            self._setup = {"op": "setup", "tools": [guest_spec(t) for t in self.registry],
                           "limits": limits}
        return self._setup

    def _attach(self, worker: Worker) -> None:
        # The guest's requests need the tools, never the Session itself: holding it here
        # would keep a dropped, unclosed session alive through the guest's thread.
        worker.ops = functools.partial(_route, self.registry)
        self._state.worker = worker
        first, self._state_first = self._state_first, None
        if first is not None:  # a saved interpreter: its answer says what came along
            message = first.first(worker, self._setup_message())
            reply = worker.submit(Command(message, before=worker.configure(self.limits))).result(60)
            self._first_reply = reply
            if not isinstance(reply, dict) or not reply.get("ok"):
                raise RuntimeError(f"the guest could not load the tools: {reply.get('error')}")
            return
        # Not waited for here: on a turn-based runtime the first cell, sent right after, then
        # runs in the same turn as the setup (see `_settle`).
        self._setup_reply = worker.submit(Command(self._setup_message(),
                                                  before=worker.configure(self.limits)))

    def _settle(self) -> None:
        """Raise if the guest could not load the tools (waits for its answer if need be)."""
        pending, self._setup_reply = self._setup_reply, None
        if pending is not None:
            reply = pending.result(60)
            if not isinstance(reply, dict) or not reply.get("ok"):
                raise RuntimeError(f"the guest could not load the tools: {reply.get('error')}")

    def _ensure_worker(self, settle: bool = True) -> Worker:
        if self._closed:  # closed while a cell ran: no new guest in a folder that is gone
            raise SessionClosed("this session was closed")
        worker = self._state.worker
        if worker is None or not worker.alive:
            dead, self._dead = self._dead or worker, None
            why, self._stopped = self._stopped, None
            came = self._replace(dead)
            if came.exact is None:
                self._lost = came.lost if dead is not None and came.lost else None
            else:
                self._notices.append(f"{why or 'The interpreter stopped after the last cell.'} "
                                     f"{came.text('that cell')}")
            worker = self._state.worker
        assert worker is not None
        if settle:
            self._settle()
        return worker

    def _given_up(self, worker: Worker, why: str) -> None:
        """`worker` was stopped while no result could say so: the next guest comes back to
        its point, and the next result tells `why`."""
        self._dead, self._stopped = worker, why
        self._state.worker = None

    def _replace(self, dead: Worker | None) -> CameBack:
        """A new guest in place of `dead` (given up), with the state it kept, if any."""
        if self._closed:  # closed while a cell ran: no new guest in a folder that is gone
            raise SessionClosed("this session was closed")
        names = self._lost if self._lost is not None else self._names
        self._names, self._lost, self._state.worker = (), None, None
        comeback = Rollback.of(dead, names) if dead is not None else None
        why = dead.points.note if dead is not None else None
        if comeback is not None:
            self._state_first = comeback if comeback.memory is not None else None
            try:
                worker = self._new_guest()
                self._settle()
                missing, self._names = comeback.load(worker, self.workdir, self._first_reply)
                self._unless_closed()
                return comeback.came_back(missing)
            except SessionClosed:
                raise
            except Exception as exc:  # noqa: BLE001 - then a new interpreter, saying why
                self._unless_closed()
                log.warning("tooliscode: coming back from a stopped cell failed: %s", exc)
                why = f"coming back to it failed: {exc}"
                self._state_first, self._names = None, ()
                broken, self._state.worker = self._state.worker, None
                if broken is not None:
                    broken.shutdown(quick=True)
        self._new_guest()
        return CameBack(None, lost=names, why=why)

    def _new_guest(self) -> Worker:
        """A new guest in place of a given-up one (`_replace`). A session closed meanwhile on
        another thread (a stop and a close come together: an MCP session's DELETE) found no
        guest to let go, and its folder may be gone already: the new guest goes at once, or
        is not made, and the caller hears that the session was closed."""
        try:
            self._attach(Worker(self.runtime, self.workdir, self.limits))
        except Exception:
            self._unless_closed()
            raise
        self._unless_closed()
        worker = self._state.worker
        assert worker is not None
        return worker

    def _unless_closed(self) -> None:
        if self._closed:  # let go of what `close` could not see, as it would have
            self._state.release()
            raise SessionClosed("this session was closed")


def _route(registry: ToolRegistry, op: str, msg: dict[str, Any],
           cell: Requests | None) -> dict[str, Any]:
    """The guest's requests other than commands: tool calls (for the running cell) and search."""
    if op == "search":
        limit = max(0, min(int(msg.get("limit", 10)), _MAX_FOUND))
        found = registry.search(str(msg.get("query", ""))[:_QUERY_CHARS], limit)
        return {"ok": True, "value": [search_entry(t, registry.summary(t)) for t in found]}
    if cell is not None:
        return cell.handle(op, msg)
    return {"ok": False, "kind": "protocol", "error": "no cell is running"}
