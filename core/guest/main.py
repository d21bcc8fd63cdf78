"""The guest's command loop: wait in the host for a command, run it, report, repeat.

On a turn-based runtime the host runs `serve` once per turn instead; it ends when the host
answers "yield", so no wasm stack stays live between commands.
"""

from __future__ import annotations

import builtins
import os
import sys

from . import channel, reach, stream, turns
from .cells import CellRunner, FinalAnswer
from .discovery import make_help, namespace_hint, search_tools
from .errors import OUT_OF_MEMORY, describe_failure
from .hooks import AfterImport, Unavailable
from .tools import ToolError, ToolFunction, ToolNamespace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["attach", "forget_session", "main", "prepare", "start", "serve"]


def final_answer(value: Any) -> None:
    """End the run with `value` as the answer: the cell stops here and the host returns
    `value` without another model turn."""
    raise FinalAnswer(value)


class Guest:
    """The interpreter's state between commands."""

    def __init__(self) -> None:
        self.runner = CellRunner()
        self.setup_msg: dict[str, Any] = {"tools": []}
        self.tools: dict[str, Any] = {}
        self.kept: Any = None
        """What the last checkpoint held, when it can be told unchanged (`points.unchanged_since`)."""
        self.line: list[int] | None = None
        """[the last whole checkpoint's mark, the deltas given since]: what the host's point
        holds, as far as this guest knows (`points.delta`); None after anything else."""

    def helpers(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        namespaces: dict[str, ToolNamespace] = {}
        for spec in self.setup_msg.get("tools", ()):
            fn = ToolFunction(spec)
            group = spec.get("namespace")
            if group:
                ns = namespaces.get(group)
                if ns is None:
                    docs = self.setup_msg.get("namespaces") or {}
                    ns = namespaces[group] = ToolNamespace(group, docs.get(group, ""))
                ns._add(spec["name"], fn)
            else:
                found[spec["name"]] = fn
        found.update(namespaces)
        self.tools = {**found}
        return {**found, "ToolError": ToolError, "search_tools": search_tools,
                "final_answer": final_answer, "help": make_help(self.tools)}

    def persist(self, op: str, path: str, limit: Any = None) -> dict[str, Any]:
        """Save the variables into `path` (a file in the session folder), or load them; or
        ("checkpoint") hand them to the host, the point a stopped cell's session comes back
        to (`_checkpoint`)."""
        ns, helpers = self.runner.ns, self.runner.helpers
        persist = _persist()
        if op != "restore":
            names = self._kept_names()
            if op == "checkpoint":
                if not names:
                    self.kept = self.line = None  # the host keeps no point for none
                    return {"ok": True, "empty": True}
                self.kept, same = _points().unchanged_since(ns, names, self.kept)
                if same:  # the host's point holds this state already
                    return {"ok": True, "same": True}
                return self._checkpoint(persist, names, limit if type(limit) is int else None)
            data, dropped = persist.dump(ns, names, helpers)
            with open(path, "wb") as f:
                f.write(data)
            return {"ok": True, "dropped": dropped}
        with open(path, "rb") as f:
            failed = persist.load(f.read(), ns, helpers)
        return {"ok": True, "failed": failed, "names": self.runner.user_names()}

    def _checkpoint(self, persist: Any, names: list[str], limit: int | None) -> dict[str, Any]:
        """Hand the variables to the host as raw bytes, unless they pickle to more than
        `limit` bytes or than the memory left: then no point is kept (the cell that just
        ended has its result already)."""
        self.line = None
        try:
            data, dropped = persist.dump(self.runner.ns, names, self.runner.helpers, limit)
        except persist.TooBig as exc:
            self.kept = None
            return {"ok": True, "too_big": exc.size}
        except MemoryError:
            # Said as a memory error, as a cell's is: the loop keeps its reserve let go until
            # a command has memory enough (`_Loop.serve`), so the next cell can free some.
            self.kept = None
            return {"ok": False, "error": _NO_ROOM_TO_KEEP, "error_type": "MemoryError"}
        channel.request_encoded(b"\0" + data)  # bytes as they are: no JSON for them
        # Marked at random: a guest's counter would start again in the next one, whose host
        # may still hold this one's point (`Points` takes a delta on this mark alone).
        mark = int.from_bytes(os.urandom(6), "little")
        self.line = [mark, 0]
        return {"ok": True, "dropped": dropped, "line": mark}

    def _kept_names(self) -> list[str]:
        """The names a checkpoint or a snapshot keeps."""
        return sorted(k for k in self.runner.own_keys()
                      if type(k) is str and not k.startswith("__"))

    def _point_after(self) -> str | dict[str, Any] | None:
        """After a cell whose host keeps checkpoints, what its point needs, so that no
        checkpoint need follow and the exchange that would ask for it is saved: what the
        cell changed since the host's point (`points.delta`), where the cell could change only
        what it names; "same" when the variables hold what the last checkpoint took
        (`points.unchanged_since`); "empty" when there are none. None: a checkpoint is
        to follow. Only a checkpoint sets what is compared against (an empty namespace
        clears it: the host then holds no point to compare with)."""
        points, reached, line, runner = _points(), self.runner.reach, self.line, self.runner
        self.line = None  # kept only where the host's point is this state, or follows it
        if reached is not None and line is not None:
            told = points.delta(runner.ns, runner.own_keys(), runner.helpers, reached, line)
            if told is not None:
                if "set" in told or "delta" in told:
                    self.kept = None  # it held what the last whole checkpoint took
                self.line = line
                return told
        names = self._kept_names()
        if not names:
            self.kept = None  # the host keeps no point for an empty namespace
            return "empty"
        if points.unchanged_since(runner.ns, names, self.kept)[1]:
            self.line = line
            return "same"
        return None

    def rebind(self, msg: dict[str, Any]) -> dict[str, Any]:
        """After an exact restore: the new session's tools and limits, as "setup" gives them,
        but the cells' variables stay (setup clears them). Open files are named: their
        descriptors stayed with the old process."""
        runner, setup = self.runner, {**msg, "op": "setup"}
        kept = {k: runner.ns[k] for k in runner.ns.keys() - runner.baseline}
        if setup != self.setup_msg:  # else its tools and limits are these already
            self.handle(setup)
            runner.ns.update(kept)
        return {"ok": True, "names": runner.user_names(), "lost": _persist().lost_files(kept)}

    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        op = msg.get("op")
        if op == "cell":
            stream = msg.get("stream", False)
            result = self.runner.run(str(msg.get("code", "")),
                                     stream if type(stream) is int else None,
                                     stream is not False, self.line is not None
                                     and bool(msg.get("point")))
            if result.get("error_type") == "NameError":
                result["error"] = namespace_hint(result["error"], self.tools)
            if msg.get("point"):
                try:
                    point = self._point_after()
                except Exception:  # noqa: BLE001 - the cell ran: its result stands, and a
                    self.line = point = None  # whole checkpoint follows (or says why not)
                if point is not None:
                    result["point"] = point
            return result
        if op not in ("checkpoint", "snapshot"):  # the others may change the namespace
            self.runner.changed()
        if op in ("setup", "restore", "rebind", "reset"):
            self.kept = self.line = None  # a namespace the last checkpoint did not see
        if op in ("setup", "reset"):
            reach.forget()
        if op == "setup":
            self.setup_msg = msg
            self.runner.reset(self.helpers(), msg.get("limits") or {})
            sdk = msg.get("sdk")
            if sdk:
                exec(compile(sdk, "<tooliscode>/sdk.py", "exec"), self.runner.ns)
                self.runner.baseline = set(self.runner.ns)
            return {"ok": True}
        if op in ("snapshot", "restore", "checkpoint"):
            return self.persist(op, str(msg.get("path", "")), msg.get("limit"))
        if op == "rebind":
            return self.rebind(msg)
        if op == "reset":
            return self.handle({**self.setup_msg, "op": "setup"})
        if op == "warm":
            import asyncio  # noqa: F401 - paid now, in the pool, not in the first cell

            from . import aio

            aio.install()
            script = msg.get("rehearse")
            if script:
                from .rehearsal import rehearse

                rehearse(self.handle, script)
                forget_session()
            return {"ok": True}
        return {"ok": False, "error": f"unknown command {op!r}"}


_NO_ROOM_TO_KEEP = ("a pickled copy of the variables needs more memory than the session "
                    "has left under Limits.memory_bytes")


def _persist() -> Any:
    """The persist module, imported at first use (a guest that never saves does not pay for
    pickle) and then kept: an import statement per cell costs more than the lookup."""
    global _persist_module
    if _persist_module is None:
        from . import persist

        _persist_module = persist
    return _persist_module


_persist_module: Any = None


def _points() -> Any:
    """The points module (it imports persist), as `_persist` does."""
    global _points_module
    if _points_module is None:
        from . import points

        _points_module = points
    return _points_module


_points_module: Any = None


def _install_aio(asyncio: Any) -> None:
    """Installs `HostLoop` the moment user code first imports asyncio, so a cold guest
    does not pay for asyncio before it needs it."""
    from . import aio

    aio.install()


def main(exchange: Any, boot: dict[str, Any]) -> None:
    """Set up, then serve commands until the host says exit. A turn-based runtime
    (`boot["turns"]`) only sets up here and calls `serve` once per turn."""
    start(exchange, boot)
    if not boot.get("turns"):
        serve()


def start(exchange: Any, boot: dict[str, Any]) -> None:
    """Everything done once per interpreter, before the first command."""
    prepare()
    attach(exchange, boot.get("cwd"))


def prepare() -> None:
    """What needs no host: done at boot, or once in a runtime's build (its image carries
    it: see the default runtime's app module)."""
    global _loop
    if _loop is not None:
        return
    if "asyncio" in sys.modules:
        from . import aio

        aio.install()
    else:
        sys.meta_path.insert(0, AfterImport("asyncio", _install_aio))
    builtins.exit = builtins.quit = _no_exit  # type: ignore[attr-defined]
    Unavailable.install()
    stream.install()
    reactor = sys.modules.get("_reactor")  # the data runtime's: its turns skip the compiler
    if reactor is not None:
        turns.install(reactor, serve)
    _loop = _Loop(Guest())


def attach(exchange: Any, cwd: str | None) -> None:
    """Connect the prepared guest to its host and its folder."""
    channel.exchange = exchange
    if cwd:
        os.chdir(cwd)
        sys.path.insert(0, cwd)
    reach.settle(cwd)


def serve(first: bytes | None = None) -> None:
    """Take commands until the host answers "exit" or, on a turn-based runtime, "yield".
    `first`: the host's answer to "ready", where the turn brought it."""
    if _loop is None:
        raise RuntimeError("tooliscode_guest.main.start was not called")
    _forget_turn_sources()
    _loop.serve(first)


def _forget_turn_sources() -> None:
    """The data runtime's reactor registers each turn's source with linecache, as a prompt
    does for tracebacks, under a new name (`<turn N>`) each turn, and never lets it go: an
    entry per turn, and a turn per cell once rollback points end them. Our turns run this
    loop's own line, which no traceback of a cell needs; the entries go once there are a few
    (so a cell pays for the scan once in a while, not each time)."""
    cache = getattr(sys.modules.get("linecache"), "_interactive_cache", None)
    if type(cache) is not dict or len(cache) < _TURN_SOURCES_KEPT:
        return
    for key, entry in list(cache.items()):
        if type(entry) is tuple and len(entry) == 4 and type(entry[3]) is str \
                and entry[3].startswith("<turn "):
            del cache[key]


class _Loop:
    """The command loop and what it keeps between turns."""

    def __init__(self, guest: Guest) -> None:
        self.guest = guest
        self.oom_frame = channel.encode({"op": "done", "result": _OOM_RESULT})
        self.reserve: bytearray | None = bytearray(_RESERVE_BYTES)

    def serve(self, first: bytes | None = None) -> None:
        reply = channel.request({"op": "ready"}) if first is None else channel.decode(first)
        while reply.get("op") not in ("exit", "yield"):
            try:
                result = self.guest.handle(reply)  # read each time: a warm-up replaces it
            except BaseException as exc:  # noqa: BLE001 - the loop itself must survive
                self.reserve = None
                try:
                    result = describe_failure(exc)
                except BaseException:  # noqa: BLE001 - not even memory to describe it
                    result = _OOM_RESULT
            if result.get("error_type") == "MemoryError":
                self.reserve = None  # room for the report: even `len(frame) + 4` allocates
            try:
                reply = channel.request({"op": "done", "result": result})
            except MemoryError:  # the report itself did not fit: send the one made in advance
                result = self.reserve = None
                reply = channel.request_encoded(self.oom_frame)
            # Taken back only after a command that had memory enough: right after running
            # out, the reserve's room is what lets the next cell run `del big`.
            if self.reserve is None and result is not None \
                    and result.get("error_type") != "MemoryError":
                try:
                    self.reserve = bytearray(_RESERVE_BYTES)
                except MemoryError:
                    pass


_loop: _Loop | None = None


def forget_session() -> None:
    """After a warm-up session of our own: the next command is a new session's, as after
    the boot (see `rehearsal.py`)."""
    from .rehearsal import forget

    if _loop is not None:
        _loop.guest = Guest()
    forget()


_OOM_RESULT = {"ok": False, "error": OUT_OF_MEMORY, "error_type": "MemoryError"}
_RESERVE_BYTES = 256 * 1024
"""Memory held back from user code and let go when a cell runs out, so the loop can still
describe the failure and report it to the host."""
_TURN_SOURCES_KEPT = 64
"""Registered sources linecache may hold before the turns' are let go (`_forget_turn_sources`)."""


def _no_exit(code: Any = None) -> None:
    """exit() ends the cell, not the session."""
    raise SystemExit(code)
