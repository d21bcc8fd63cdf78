"""The default runtime: CPython 3.14 as a pre-initialized WASI component (see `_build.py`).

Its guests start from the component's memory image, with the guest package, asyncio and the
usual standard library imported and warm: a new one gives its first result in about 2 ms.
Like the data runtime it is turn-based: each command runs in one call of the `turn` export,
and between turns no wasm stack is live. Its channel is the world's `host-call` import; its
console, folder quota, sleeps and network go through the interposer and the guard.

A component's memory cannot be moved into another instance (its libc holds handles of its
own store), so a session's state crosses processes as the engine's pickled snapshot. Within
its own instance it can be written back, though: a guest is renewed for the next run by
setting its memory back to the moment after its setup (`_in_place.py`), or, where that cannot
be, by starting its component again and replaying its boot and setup.
"""

from __future__ import annotations

import logging
import marshal
import shutil
import threading
from pathlib import Path

import wasmtime
from wasmtime import component

from ..._folders import empty_folder
from ..._temp_folders import new_folder
from .._wasmtime import userfault
from .._wasmtime.pooling import exhausted, slots
from .._wasmtime.tiers import Tier, Tiers
from .._wasmtime.watched import WatchedGuest, WatchedRuntime
from ..base import GUEST_DIR, GuestSpec, GuestTrap
from . import _answers, _host, _in_memory, _memory
from ._app import STDLIB
from ._build import Built, find_or_build
from ._guard import CONSOLE_BYTES, Guard
from ._in_place import FIND, GROW, LOCATE, RESEED, Kept, locate
from ._interpose import CONSOLE_IMPORT, GUARD_IMPORT

__all__ = ["ComponentInstance", "ComponentRuntime"]

log = logging.getLogger("tooliscode")

WASM_STACK = 32 << 20
"""Deep but legal recursion (json.loads of 100k brackets) must end as a RecursionError when
CPython's own check says so, not as a wasm stack overflow first."""
THREAD_STACK = 2 * WASM_STACK
"""The guest's thread runs the wasm frames and the host's own below them."""
_FIND_S = 2.0
"""How long `idle`'s turn may take: a few dozen microseconds, unless a cell broke it."""
_FLAGS = f"component,epoch_interruption,max_wasm_stack={WASM_STACK}"
_SCRIPT_TURNS = 4
"""A baseline comes after the boot and the setup (a turn each): past a few turns none is
coming, and the turns stop being kept."""
ZONEINFO = Path("/usr/share/zoneinfo")
"""The host's time zone database, lent read-only where zoneinfo looks for it."""
_PRECOMPILE = f'''
import compileall, py_compile
compileall.compile_dir({STDLIB!r}, quiet=2, workers=1,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
open({GUEST_DIR + "/done"!r}, "w").close()
'''
"""Run once per built component by a guest of ours (its `.pyc` are then shared by all)."""


def _configure(config: wasmtime.Config) -> None:
    config.epoch_interruption = True
    # Without an async stack at least as big as max_wasm_stack, Engine() aborts the process.
    wasmtime._ffi.wasmtime_config_async_stack_size_set(config.ptr(), WASM_STACK)
    config.max_wasm_stack = WASM_STACK


class ComponentInstance(WatchedGuest):
    """One guest: an instance of the component in its own store."""

    _rt: ComponentRuntime
    first_answer_limit = 1 << 16
    """A cell's code up to this size crosses with the turn; a bigger one is asked for, where
    the app module makes room for it first."""

    def __init__(self, runtime: ComponentRuntime, spec: GuestSpec, *,
                 stdlib_writable: bool = False):
        tier = runtime.tiers.current
        slots = None if spec.ahead else runtime.tiers.slot_tier(tier)
        super().__init__(runtime, spec, slots or tier)
        self.pending: bytes | None = None
        """A big answer the guest was told the size of, until it asks for it."""
        self._spec, self._stdlib_writable = spec, stdlib_writable
        self.script: list[tuple[str, list[bytes]]] | None = []
        """The turns taken and the host's answers to each, until `keep_baseline`: what
        `renew` plays again in a new instance (None once kept, or when it cannot be)."""
        self._baseline: list[tuple[str, list[bytes]]] | None = None
        self._kept: Kept | None = None
        """The memory right after setup, when it can be found: what `renew` writes back."""
        self._prefix = ""
        """Source the next turn plays first (`RESEED` after a write-back)."""
        try:
            self._start()
        except BaseException:
            self._left_slot()
            raise

    def _wasi(self) -> wasmtime.WasiConfig:
        """What the guest may see: its folder, the standard library, the time zones."""
        spec = self._spec
        wasi = wasmtime.WasiConfig()
        wasi.argv = ["python"]
        wasi.env = list(spec.extra_env.items())  # nothing of the host's
        wasi.preopen_dir(str(spec.workdir), GUEST_DIR)
        wasi.preopen_dir(str(self._rt.built.stdlib), STDLIB, fs_mutable=self._stdlib_writable)
        if ZONEINFO.is_dir():
            wasi.preopen_dir(str(ZONEINFO), str(ZONEINFO), fs_mutable=False)
        return wasi

    def _start(self) -> None:
        """An instance of the component in this guest's store, ready for its first turn: in
        a slot where the guest took that tier (`pooling.py`) and one is free, else as any."""
        self.guard = Guard(self)
        self._store.set_wasi(self._wasi())
        tier = self.tier
        try:
            self._instance = tier.linker.instantiate(self._store, tier.code)
        except wasmtime.WasmtimeError as exc:
            if not tier.slotted or not exhausted(exc):
                raise
            self._store.close()
            self._left_slot()  # every slot is taken
            self.tier = tier = self._rt.tiers.current
            self._store = self._new_store(self.memory_bytes)
            self._store.set_wasi(self._wasi())
            self._instance = tier.linker.instantiate(self._store, tier.code)
        func = self._instance.get_func(self._store, "turn")
        if func is None:
            raise RuntimeError("the sandbox component exports no turn function")
        self._turn = _host.Turn(self._store, func)
        self._shed = False
        """Whether `idle` has run on this instance."""
        self.in_memory = _in_memory.InMemory()
        """Big requests read in place, from this instance's memory."""
        self.shed_memory: _memory.Memory | None = None
        """The memory `idle` found and registered, if any."""

    def run(self) -> None:
        """Boot: the boot code's turn (it asks the host for its setup and returns)."""
        self.turn(self._spec.boot_source)

    def turn(self, source: str, first: bytes | None = None) -> None:
        if first is not None:  # the app module's `turn` splits it off (see `_app.py`)
            source += "\0" + first.decode("latin-1")
        if self._prefix:
            source, self._prefix = self._prefix + source, ""
        if self.script is not None:
            if len(self.script) >= _SCRIPT_TURNS:  # no baseline was asked for: a session's
                self.script = None                 # cells are not kept
            else:
                self.script.append((source, []))
        status = self._call(self._turn, source, exit_ok=False)
        if status != 0:
            raise GuestTrap("crash", f"the guest's turn failed (status {status}; its "
                            "traceback went to stderr)")

    def answered(self, answer: bytes) -> None:
        """The host answered the guest with `answer` (kept for `renew` until the baseline)."""
        if self.script is not None and self.script:
            self.script[-1][1].append(answer)

    def warmed(self) -> None:
        """The warm-up rehearses a whole session (4 ms of CPU, some 800 page faults): a
        renewal that replayed it would pay that before every run."""
        if self.script:
            self.script.pop()

    def keep_baseline(self, grow: bool = True) -> bool:
        """Right after setup: its memory (written back by `renew`, where it can be found),
        and the turns so far (played again in a new instance where it cannot). The turns go
        on being noted, our own here aside: a session's setup may take a baseline after the
        pool's. A guest in a slot keeps only its turns: its memory is the slot's, all of it
        resident, which a mirror would copy whole. Its renewal starts it again off the slot
        (`_start_again`), and it is renewed in place from then on."""
        self._baseline, self.script = self.script, None
        self._forget_memory()
        if not self.tier.slotted:
            self._kept = Kept.take(self, grow)
        self.script = None if self._baseline is None else list(self._baseline)
        return bool(self._baseline)

    def renew(self, workdir: Path, restart: bool = True) -> bool:
        """Between turns: this guest as it was at `keep_baseline`, its folder emptied: its
        memory written back, or else (`restart`) a new instance in a new store given the turns
        this one took with the same answers (so it boots and sets up as this one did). Either
        way with new random seeds. False when it cannot be: close it then."""
        if self._baseline is None or self._stop_reason is not None \
                or not empty_folder(workdir):
            return False
        self._quota.emptied()
        self._quota.hit = self._changed = self._too_many_open = False
        self.pending = None
        if self._kept is not None and self._kept.write_back(self):
            self._prefix, self.script = RESEED, list(self._baseline)
            return True
        return restart and self._start_again()

    def _start_again(self) -> bool:
        """A new instance in this one's place, given the turns this one took."""
        baseline = self._baseline
        assert baseline is not None
        old, self._instance, self._turn = self._store, None, None  # type: ignore[assignment]
        old.close()
        self._left_slot()  # off its slot, if it held one
        self.tier = self._rt.tiers.current
        self._store = self._new_store(self._spec.memory_bytes)
        self.opened.clear()
        self._trap_reason, self._prefix = None, ""
        self._forget_memory()
        self._start()
        handler, self.script = self.handler, None  # the turns taken again are the baseline's
        try:
            for source, answers in baseline:
                replies = iter(answers)
                self.handler = lambda _request, replies=replies: next(replies)
                self.turn(source)
        except (GuestTrap, StopIteration):
            return False
        finally:
            self.handler = handler
        self._kept = Kept.take(self)
        self.script = list(baseline)
        return True

    @property
    def idle_work(self) -> bool:
        """`idle` has yet to run; never in a slot, whose pages are all the guest's own."""
        return not self._shed and not self.trapped and not self.tier.slotted

    def idle(self) -> None:
        """Once per instance: its start image read one page per fault from now on, and the
        pages its boot mapped sixteen at a time let go (`userfault.one_page_reads`): an idle
        guest keeps some 2 MB of the image resident instead of 10."""
        if not self.idle_work:
            return
        self._shed = True
        if self._kept is not None:
            memory: _memory.Memory | None = self._kept.memory
        else:
            script, self.script = self.script, None  # our turn, not one to play again
            self.arm(_FIND_S)  # a cell may have broken what the turn uses: bounded
            try:
                memory = locate(self)
            finally:
                self.script = script
        if memory is not None and userfault.one_page_reads(memory.address + memory.image.start,
                                                           memory.image.length):
            self.shed_memory = memory

    def arm(self, seconds: float | None) -> None:
        super().arm(seconds)
        self.guard.console_left = CONSOLE_BYTES

    def write_console(self, fd: int, data: bytes) -> None:
        if self.output is not None:
            self.output("stdout" if fd == 1 else "stderr", data)

    @property
    def trapped(self) -> bool:
        """A trap (or a stop) ended a turn since the guest was last renewed."""
        return self._trap_reason is not None

    def close(self) -> None:
        held = self._store is not None
        super().close()
        if held:
            self._left_slot()

    def _left_slot(self) -> None:
        """This guest's store, if it held a slot, is closed: the slot is no longer held."""
        if self.tier.slotted:
            self.tier = self._rt.tiers.current  # (counted once)
            self._rt.tiers.slot_left()

    def _forget_memory(self) -> None:
        if self._kept is not None:
            self._kept.close()
            self._kept = None

    def _release(self) -> None:
        self._instance = self._turn = None  # type: ignore[assignment]
        self.script = self._baseline = None
        self._forget_memory()


class ComponentRuntime(WatchedRuntime):
    """The sandbox component under wasmtime. One per process (see `runtime_named`)."""

    name = "component"
    python_note = "Python 3.14 (standard library only)"
    thread_stack = THREAD_STACK
    turn_based = True
    renews = True
    baked_guest = True
    pool_size = 1

    def __init__(self, *, tick_s: float = 0.005):
        self._tick_s = tick_s
        self._start_watching()
        self._ready = threading.Lock()
        self.built: Built
        self._loaded: str | None = None
        self._boot_seen: bytes | None = None
        self._callbacks = [_host.call_callback(_answers.answer),
                           _host.guard_callback(_answers.verdict),
                           _host.console_callback(_answers.console)]
        self._stdlib_done = threading.Event()

    @property
    def transport_source(self) -> str:
        return ""  # `exchange` is the app module's, in the namespace turns run in

    def _load(self, boot_reply: bytes, boot_source: str) -> None:
        """Find (or build) and compile the component for the guest code the engine's boot
        answer carries (its guest package and warm-up session)."""
        boot = marshal.loads(boot_reply)
        warm = boot.get("warm") or {}
        with self._ready:
            if self._boot_seen == boot_reply:
                return
            script = {k: warm.get(k) for k in ("commands", "answer", "expected")}
            serve, answered = warm.get("serve") or "", warm.get("serve_answered") or ""
            script["turns"] = [boot_source, serve, answered, LOCATE, FIND, GROW, RESEED + serve,
                               RESEED + answered]
            built = find_or_build([tuple(m) for m in boot.get("modules") or ()], script,
                                  wasmtime.wat2wasm)
            if self._loaded == built.wasm.sha256:
                self._boot_seen = boot_reply
                return
            if self._loaded is not None:
                raise RuntimeError("one runtime serves one guest package; this one was asked "
                                   "for another")
            self.built = built
            self.tiers = Tiers(built.wasm, _FLAGS, configure=_configure, link=self._link,
                               ticker_period=self._tick_s, prefix="component",
                               kind=component.Component, what="the sandbox component",
                               expected={"cranelift": "about 5 s of CPU",
                                         "winch": "about 1 s"}, slots=slots())
            self._loaded = built.wasm.sha256
            # Only once loaded: a guest asked for meanwhile on another thread, finding this
            # answer seen, does not wait here (`_make`) and must find the component ready.
            self._boot_seen = boot_reply
        if not (built.stdlib / ".compiled").exists():
            threading.Thread(target=self._precompile_stdlib, name="tooliscode-stdlib",
                             daemon=True).start()
        else:
            self._stdlib_done.set()

    def _link(self, tier: Tier) -> None:
        linker = component.Linker(tier.engine)
        linker.add_wasip2()
        with linker.root() as root:
            for name, callback in zip(("host-call", GUARD_IMPORT, CONSOLE_IMPORT),
                                      self._callbacks):
                _host.define(root, name, callback)
        tier.linker = linker

    def _make(self, spec: GuestSpec) -> ComponentInstance:
        if spec.boot_reply is not None and spec.boot_reply is not self._boot_seen:
            self._load(spec.boot_reply, spec.boot_source)
        if self._loaded is None:
            raise RuntimeError("the component runtime's first guest must come with the "
                               "engine's boot answer (GuestSpec.boot_reply)")
        return ComponentInstance(self, spec)

    def _precompile_stdlib(self) -> None:
        """Compile the standard library's `.pyc` in a guest of ours, once per built component;
        until then guests compile what they import themselves (the folder is read-only to
        them)."""
        folder = new_folder("stdlib")
        try:
            with self.making():
                instance = ComponentInstance(self, GuestSpec(folder, 512 << 20, _PRECOMPILE,
                                                             ahead=True),
                                             stdlib_writable=True)
                self._live.add(instance)
            try:
                instance.arm(600.0)
                instance.run()
            finally:
                instance.close()
            if (folder / "done").exists():
                (self.built.stdlib / ".compiled").touch()
        except (GuestTrap, OSError, RuntimeError, wasmtime.WasmtimeError) as exc:
            log.warning("tooliscode: could not compile the guest's standard library: %s", exc)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            self._stdlib_done.set()

    def warm_up(self) -> bool:
        if self._loaded is None:  # no guest was ever asked for: nothing to compile yet
            return True
        compiled = self.tiers.wait()
        return self._stdlib_done.wait(600.0) and compiled

    def close(self) -> None:
        if self._loaded is not None:
            super().close()
        else:
            with self._gate:
                self._closed = True
