"""`CodeTool`: a code tool over keyed conversations, with no framework and no API shape.

    code = CodeTool([search_orders, get_customer])
    reply = code.run_code("print(len(search_orders(status='open')))", key="conversation-7")
    reply.text      # what the model reads: output, errors, and notices about the session
    reply.result    # the CellResult

Every front end runs code through one of these: `ToolIsCode` (the raw OpenAI APIs), the
framework adapters, the MCP proxy, `tooliscode serve`, text mode and the REPL.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .._closing import Closing
from ..durable import UNRESTORABLE, Call, Keeper, SessionStore
from ..engine import Cancel, Decision, KeyedSessions, Limits, OnOutput, PendingCall, Session
from ..errors import SessionClosed, SnapshotError
from ..prompt import EVICTED, failed_to_run, not_run, noted, render
from ..runtime import Runtime
from ..tools import Tool, ToolRegistry
from ._background import submit
from ._pauses import EXPIRED, GONE, PausedRuns, PauseRecord, record_key
from ._reply import Reply
from ._runs import Runs
from ._sandbox import Sandbox, Toolbox
from ._steps import Blocking, Hold, ResumeCell, RunCell, Steps, adrive, drive

__all__ = ["CodeTool"]

log = logging.getLogger("tooliscode")


class CodeTool(Closing):
    """Runs code for conversations: a sandbox per conversation key, or one per run.

    `tools` are the sandbox's tools: `Tool`s or functions, or a `Toolbox` whose tools read the
    running cell's `context` (what `run_code(context=...)` was given). A call may bring its own
    `tools=` (a framework's tools can change between runs); a conversation whose tools
    changed gets a new interpreter, and the model is told.

    Conversations (`key=`) are made on first use. Keyed ones idle for `idle_timeout_s` are
    closed, and at most `max_sessions` are kept; the key `None` is never evicted. Runs take
    a sandbox of their own (`take`), run code in it (`sandbox=`), and give it back (`finish`);
    with `keep_spare`, the next run's sandbox is started meanwhile.
    """

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] | Toolbox = (), *,
                 limits: Limits | None = None, runtime: Runtime | str | None = None,
                 workdir: str | Path | None = None,
                 describe_names: bool = True, idle_timeout_s: float | None = 1800.0,
                 max_sessions: int | None = None, keep_spare: bool = False,
                 store: SessionStore | Keeper | None = None):
        self.toolbox = tools if isinstance(tools, Toolbox) else Toolbox.of(tools)
        self.keeper = store if isinstance(store, Keeper) or store is None else Keeper(store)
        """Keeps keyed conversations in a store, so any worker process can take their next
        call (see `tooliscode.durable`); the key `None` and runs stay in this process."""
        self.limits = limits
        self.runtime = runtime
        self.workdir = Path(workdir) if workdir is not None else None
        self.describe_names = describe_names
        """Say what the names of a cell that printed nothing hold (not just their names)."""
        self._conversations: KeyedSessions[Sandbox] = KeyedSessions(
            self._conversation, idle_s=idle_timeout_s, max_sessions=max_sessions,
            evict=_close_later)
        self._runs = Runs(functools.partial(self._sandbox, renewable=True), keep_spare)
        self._paused_runs = PausedRuns()

    # -- running code -------------------------------------------------------------------------

    def run_code(self, code: str, *, key: Hashable = None, context: Any = None,
                 tools: Toolbox | None = None, sandbox: Sandbox | None = None,
                 call_id: str | None = None,
                 decisions: Mapping[str, Decision] | None = None,
                 on_output: OnOutput | None = None, cancel: Cancel | None = None) -> Reply:
        """Run `code` in conversation `key`'s sandbox (or in `sandbox`, a run's own).

        `context` is what the cell's tools read as `sandbox.context` while it runs. A failure
        of the sandbox itself comes back as a reply without a result; a closed code tool or
        sandbox raises `SessionClosed`.

        `call_id` names the model's call of the code tool: the cell's calls are
        `<call_id>:<n>`, and a cell that pauses at calls waiting for decisions answers with
        `reply.paused`. Calling again with the same `call_id` and `decisions` continues it:
        parked in this process, or run again from the state before it (with a store) in any.

        `on_output(stream, text)` gets what the cell prints as it prints it (see
        `Session.run`); a cell continued after a pause streams nothing.

        `cancel` (a `Cancel`, fired from anywhere) stops the cell, which then comes back to
        the state before it, as its reply says; fired before the cell started, no code runs
        and the reply says why. A framework's cancel, time limit or lost client reaches the
        cell this way when it cannot cancel the task that awaits `arun_code`.
        """
        return drive(self._steps(code, key, context, tools or self.toolbox, sandbox, call_id,
                                 decisions, on_output, cancel))

    async def arun_code(self, code: str, *, key: Hashable = None, context: Any = None,
                        tools: Toolbox | None = None, sandbox: Sandbox | None = None,
                        call_id: str | None = None,
                        decisions: Mapping[str, Decision] | None = None,
                        on_output: OnOutput | None = None,
                        cancel: Cancel | None = None) -> Reply:
        """`run_code` for async callers: async tools run on the running loop, and so does
        `on_output` (whose awaitables are awaited, in order). Cancelling the task that awaits
        it stops the cell too; the next cell of the conversation says so."""
        return await adrive(self._steps(code, key, context, tools or self.toolbox, sandbox,
                                        call_id, decisions, on_output, cancel))

    def _steps(self, code: str, key: Hashable, context: Any, toolbox: Toolbox,
               own: Sandbox | None, call_id: str | None = None,
               decisions: Mapping[str, Decision] | None = None,
               on_output: OnOutput | None = None,
               cancel: Cancel | None = None) -> Steps[Reply]:
        if own is None:
            sandbox, evicted = self._conversations.acquire(key)
        else:
            sandbox, evicted = own, None
        notices = [EVICTED.format(reason=evicted) if evicted else None]
        keeper = self.keeper if own is None and key is not None else None
        try:
            yield Hold(sandbox.lock)
            call: Call | None = None
            try:
                if keeper is not None:
                    call = yield Blocking(keeper.begin, (_store_key(key),))
                    if call.unreachable:
                        notices.append(call.unreachable)
                    else:
                        notices[0] = None  # evicted here, but kept in the store
                        notices.append((yield Blocking(self._resume, (sandbox, call, toolbox))))
                if not sandbox.ready(toolbox):
                    notices.append((yield Blocking(sandbox.prepare, (toolbox,))))
                if cancel is not None and cancel.why is not None:  # while it waited: no cell
                    return Reply(noted(not_run(cancel.why), notices))
                session = sandbox.enter(context)
                step = _cell_step(session, code, call_id, decisions, on_output, cancel) or \
                    (yield Blocking(self._stored_cell, (session, code, call_id, decisions, call,
                                                        on_output, cancel)))
                if isinstance(step, str):  # nothing to continue: nothing runs
                    return Reply(noted(step, notices))
                result = yield step
                if call is not None and keeper is not None:  # stored before the answer goes
                    done, call = call, None
                    paused_log = session.paused_log()
                    if result.paused and call_id is not None and paused_log is not None:
                        yield Blocking(keeper.pause, (done, record_key(done.key, call_id),
                                                      PauseRecord(paused_log,
                                                                  done.version).to_bytes()))
                    else:
                        notices.append((yield Blocking(keeper.commit, (done, session))))
                        if isinstance(step, RunCell) and step.log is not None:
                            yield Blocking(keeper.store.delete,
                                           (record_key(done.key, step.log.outer_id),))
                elif own is not None and result.paused and call_id is not None:
                    self._paused_runs.keep(call_id, own, session.limits.pause_s)
            finally:
                sandbox.context = None
                if call is not None and keeper is not None:  # the cell did not finish: store
                    keeper.end(call.key, sandbox.session)  # what there is
                sandbox.lock.release()
        except SessionClosed:
            raise
        except Exception as exc:  # noqa: BLE001 - the caller's loop must go on
            log.exception("tooliscode: the sandbox failed to run a cell")
            return Reply(noted(failed_to_run(exc), notices))
        finally:
            if own is None:
                self._conversations.release(key)
        return Reply(noted(render(result, None if self.describe_names else {}), notices), result)

    def _stored_cell(self, session: Session, code: str, call_id: str | None,
                     decisions: Mapping[str, Decision], call: Call | None,
                     on_output: OnOutput | None = None,
                     cancel: Cancel | None = None) -> RunCell | str:
        """A paused cell this process does not hold, run again from its record in the store
        (or an error when there is nothing to continue)."""
        if call is None or call.unreachable is not None or self.keeper is None:
            return GONE
        data = self.keeper.store.get(record_key(call.key, call_id or ""))
        if data is None:
            return GONE
        record = PauseRecord.from_bytes(data)
        if record.expired:
            return EXPIRED
        if record.base != call.version or record.log.code != code:
            return GONE
        return RunCell(session, code, call_id, record.log, decisions, on_output, cancel)

    def paused_calls(self, call_id: str, *, key: Hashable = None,
                     code: str | None = None) -> tuple[PendingCall, ...]:
        """The calls conversation `key`'s cell paused in code tool call `call_id` waits on:
        parked in this process, or recorded in the store (an expired record too: continuing
        it then says so). Empty when no such cell is paused (or, given `code`, when the paused
        cell ran other code), so the call is a new one.

        A framework that runs its tool again on resume without saying which decisions are
        new (LangGraph) asks this first, to tell a continuation from a new call."""
        sandbox = self._paused_runs.peek(call_id) or self._conversations.get(key)
        session = sandbox.session if sandbox is not None else None
        if session is not None and session.paused_for == call_id:
            log = session.paused_log()
            return session.paused if log is None or code in (None, log.code) else ()
        if self.keeper is None or key is None:
            return ()
        stored = _store_key(key)
        data = self.keeper.store.get(record_key(stored, call_id))
        if data is None:
            return ()
        record = PauseRecord.from_bytes(data)
        if record.base != self.keeper.store.version(stored) or code not in (None,
                                                                          record.log.code):
            return ()  # the conversation moved on, or another cell: the record outlived it
        return tuple(record.log.pending)

    def paused_in(self, key: Hashable = None, sandbox: Sandbox | None = None) -> str | None:
        """The code tool call whose cell is parked in conversation `key`'s sandbox (or in
        `sandbox`, a run's), if one is."""
        sandbox = sandbox if sandbox is not None else self._conversations.get(key)
        session = sandbox.session if sandbox is not None else None
        return session.paused_for if session is not None else None

    def paused_run(self, call_id: str) -> Sandbox | None:
        """The sandbox of a run whose cell paused in code tool call `call_id`, for the run
        that continues it (it is that run's sandbox from now on)."""
        return self._paused_runs.take(call_id)

    def has_paused_run(self, call_id: str) -> bool:
        """A run's cell paused in code tool call `call_id` is kept for the run that continues
        it (which then needs no sandbox of its own: see `paused_run`)."""
        return self._paused_runs.waits(call_id)

    def _resume(self, sandbox: Sandbox, call: Call, toolbox: Toolbox) -> str | None:
        """Bring the sandbox up to the store's version of the conversation (another worker
        may have moved it on); a notice if the saved session could not be restored, or if
        the conversation's last cell was lost with the worker that ran it."""
        keeper, session = self.keeper, sandbox.session
        assert keeper is not None
        if session is not None and (call.version is None or keeper.current(call.key,
                                                                           call.version)):
            return call.lost_notice(restored=call.version is not None)
        blob = keeper.fetch(call.key, call.version)
        if blob is None:
            return call.lost_notice(restored=False)
        try:
            if session is not None and sandbox.ready(toolbox) and keeper.reload(session, blob):
                return call.lost_notice(restored=True)  # into the interpreter still here
            sandbox.adopt(toolbox, lambda: Session.restore(
                blob, ToolRegistry(toolbox.bind(sandbox)), limits=self.limits,
                workdir=sandbox.workdir, runtime=self.runtime, announce=False))
        except SnapshotError as exc:
            lost = call.lost_notice(restored=False)
            return UNRESTORABLE.format(error=exc) + (f" {lost}" if lost else "")
        return call.lost_notice(restored=True)

    # -- conversations ------------------------------------------------------------------------

    @property
    def keys(self) -> list[Hashable]:
        """The conversation keys with a live sandbox."""
        return self._conversations.keys()

    def get(self, key: Hashable = None) -> Sandbox | None:
        """Conversation `key`'s sandbox if it has one, without touching it."""
        return self._conversations.get(key)

    def session(self, key: Hashable = None, tools: Toolbox | None = None) -> Session:
        """Conversation `key`'s session, started now if need be (e.g. to read its files)."""
        sandbox, _ = self._conversations.acquire(key)
        try:
            sandbox.prepare(tools or self.toolbox)
            return sandbox.live()
        finally:
            self._conversations.release(key)

    def drop(self, key: Hashable = None) -> bool:
        """Close one conversation's sandbox now; its next call starts a fresh one."""
        return self._conversations.drop(key)

    def evict_idle(self) -> list[Hashable]:
        """Close the keyed sandboxes idle too long now (it also happens on every call)."""
        return self._conversations.evict_idle()

    # -- runs ---------------------------------------------------------------------------------

    def take(self) -> Sandbox:
        """A sandbox for one run (the started spare, if there is one)."""
        return self._runs.take()

    def finish(self, sandbox: Sandbox, tools: Toolbox | None = None) -> None:
        """A run ended: close its sandbox on another thread and, with `keep_spare`, start
        the next run's with `tools`; a sandbox no code ran in becomes that spare itself. A
        sandbox whose cell is paused is kept for the run that continues it (`paused_run`)."""
        if self._paused_runs.holds(sandbox):
            return
        self._runs.finish(sandbox, tools)

    @property
    def spare(self) -> Sandbox | None:
        """The started sandbox the next run will take, if there is one."""
        return self._runs.spare

    def close(self) -> None:
        """Close every sandbox: the conversations', the paused runs' and the spare (after the
        saves of a store are done)."""
        if self.keeper is not None:
            self.keeper.settle()
        self._paused_runs.close()
        self._runs.close()
        self._conversations.close()

    # -- making sandboxes ---------------------------------------------------------------------

    def _sandbox(self, workdir: Path | None = None, renewable: bool = False) -> Sandbox:
        return Sandbox(limits=self.limits, workdir=workdir, runtime=self.runtime,
                       renewable=renewable)

    def _conversation(self, key: Hashable) -> Sandbox:
        """A keyed conversation's sandbox: under `workdir`, each key has a folder of its own."""
        workdir = self.workdir
        if workdir is not None and key is not None:
            workdir = workdir / _folder_name(key)
        return self._sandbox(workdir)


def _close_later(sandboxes: list[Sandbox]) -> None:
    """Evicted sandboxes close off the caller's path: the caller is about to run code."""
    for sandbox in sandboxes:
        submit(sandbox.close)


def _store_key(key: Hashable) -> str:
    """The same conversation key names the same snapshot in every process."""
    return key if isinstance(key, str) else repr(key)


def _folder_name(key: Hashable) -> str:
    text = str(key)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:40]
    return f"{safe}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def _cell_step(session: Session, code: str, call_id: str | None,
               decisions: Mapping[str, Decision] | None,
               on_output: OnOutput | None, cancel: Cancel | None) -> RunCell | ResumeCell | None:
    """How to run this call without asking the store: a new cell, or the paused one
    continued where it waits; None when only the store can say (`_stored_cell`). Decided
    inline, since a step handed to a thread costs an async caller a hop on every cell."""
    if call_id is not None and session.paused_for == call_id:
        return ResumeCell(session, decisions or {})
    if decisions is None:
        return RunCell(session, code, call_id, on_output=on_output, cancel=cancel)
    return None
