"""Two compiles of a runtime's wasm: Winch's first, ready in seconds; Cranelift's later.

A first use on a fresh machine would otherwise wait for Cranelift: some 5 s of CPU for the
default runtime's component, about 90 s for the data runtime's module. Winch, wasmtime's
baseline compiler, compiles it four to six times faster into code that runs some 1.5x
slower. So where Cranelift's compile is not in the cache yet, guests start on Winch's, and
Cranelift's is made in the background, on one core at the lowest priority; new guests take
it once it is ready, while guests already running finish on Winch's. Each compile needs an
engine of its own (an engine refuses the other compiler's code); the runtime's one epoch
ticker ticks both. Both are cached, keyed by the compiler.

`eager()` (what `tooliscode warmup` asks for) skips Winch and compiles Cranelift's at once,
on every core: for container builds and CI, where the wait is paid ahead of time.

A runtime may ask for slots (`pooling.py`): Cranelift's compile then also runs in an engine
that keeps a few (`Tier.slots`), for guests made when one is wanted (`slot_tier`). Once no
guest has held a slot for `SLOTS_IDLE_S`, that engine is let go, and the memory its slots
keep resident with it; the next guest wanted then starts without one while it is made again
in the background.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import wasmtime

from .compile_cache import entry_path, load_module
from .epoch_ticker import EpochTicker
from .pooling import use_pool
from .wasm_file import WasmFile

__all__ = ["Tier", "Tiers", "WINCH", "CRANELIFT", "eager", "ENV_COMPILER"]

log = logging.getLogger("tooliscode")

WINCH, CRANELIFT = "winch", "cranelift"
_STRATEGY = {CRANELIFT: 1, WINCH: 2}
"""`wasmtime_config_strategy_set`'s values (wasmtime-py names only Cranelift's)."""
ENV_COMPILER = "TOOLISCODE_COMPILER"
"""`cranelift`: no Winch first (Cranelift's compiled in the foreground when not cached);
`winch`: Winch's alone, nothing made in the background (a wheel's build, which only needs
a guest to run once)."""
_eager = False
SLOTS_IDLE_S = 30.0
"""How long slots no guest holds are kept before they are let go."""


def eager() -> None:
    """From now on in this process: no Winch; a missing Cranelift compile is made at once."""
    global _eager
    _eager = True


@dataclass(eq=False)
class Tier:
    """One compile and what runs it: its engine, its code (a module or a component), and
    what the runtime links it with (`link` sets `linker`, and `passthrough` where used)."""

    compiler: str
    engine: wasmtime.Engine
    code: Any
    linker: Any = None
    passthrough: Any = None
    callbacks: list[Any] = field(default_factory=list)
    """The C callbacks its linker calls (kept alive with it)."""
    slots: Tier | None = None
    """The same compile in an engine that keeps slots, where the runtime asked for them."""
    slotted: bool = False
    """This tier's engine keeps slots (it is another tier's `slots`)."""

    def close(self) -> None:
        for handle in (self.linker, self.passthrough, self.code, self.engine):
            if handle is not None:
                handle.close()
        self.linker = self.passthrough = self.code = None


class Tiers:
    """The compiles of one runtime's wasm file; `current` is the one new guests take."""

    def __init__(self, wasm: WasmFile, flags: str, *, configure: Callable[[wasmtime.Config], None],
                 link: Callable[[Tier], None], ticker_period: float, prefix: str, kind: Any,
                 what: str, expected: dict[str, str],
                 transform: Callable[[bytes], bytes | None] | None = None, slots: int = 0):
        self._wasm, self._flags, self._configure, self._link = wasm, flags, configure, link
        self._slots = slots
        self._load_args = {"prefix": prefix, "kind": kind, "what": what, "transform": transform}
        self._expected = expected
        self._lock = threading.Lock()
        self._slotted = 0
        """Guests holding a slot now (`slot_tier` to `slot_left`)."""
        self._slots_unused_since = 0.0
        self._reaper = self._twinning = self._closed = False
        self._ready = threading.Event()
        self.all: list[Tier] = []
        chosen = os.environ.get(ENV_COMPILER)
        self._final = WINCH if chosen == WINCH else CRANELIFT
        if chosen == WINCH:
            self.current = self._load(WINCH, self._engine(WINCH))
            self.ticker = EpochTicker(self.current.engine, ticker_period)
            self._ready.set()
            return
        cranelift = self._engine(CRANELIFT)
        cached = entry_path(wasm, self._key(CRANELIFT), prefix)
        if _eager or chosen == CRANELIFT or cached is None or cached.is_file():
            self.current = self._load(CRANELIFT, cranelift)
            self.ticker = EpochTicker(cranelift, ticker_period)
            self._twin(self.current)
            self._ready.set()
            return
        self.current = self._load(WINCH, self._engine(WINCH))
        self.ticker = EpochTicker(self.current.engine, ticker_period)
        log.warning("tooliscode: guests run on Winch's compile until Cranelift's is ready; "
                    "it is being made in the background (%s)", self._expected[CRANELIFT])
        threading.Thread(target=self._background, args=(cranelift,), daemon=True,
                         name="tooliscode-cranelift").start()

    def _key(self, compiler: str) -> str:
        return self._flags if compiler == CRANELIFT else f"{self._flags},winch"

    def _engine(self, compiler: str, parallel: bool = True) -> wasmtime.Engine:
        config = wasmtime.Config()
        self._configure(config)
        wasmtime._ffi.wasmtime_config_strategy_set(config.ptr(), _STRATEGY[compiler])
        config.parallel_compilation = parallel
        return wasmtime.Engine(config)

    def _load(self, compiler: str, engine: wasmtime.Engine) -> Tier:
        code = load_module(engine, self._wasm, self._key(compiler), **self._load_args,
                           expected=f"{self._expected[compiler]} with {compiler.title()}")
        tier = Tier(compiler, engine, code)
        self._link(tier)
        with self._lock:
            self.all.append(tier)
        return tier

    def slot_tier(self, tier: Tier) -> Tier | None:
        """For a guest wanted now: `tier`'s twin in an engine with slots, held until
        `slot_left`; None where there is none (it is made again in the background, if the
        runtime asked for slots and they were let go)."""
        with self._lock:
            twin = tier.slots
            if twin is not None:
                self._slotted += 1
                return twin
            if not self._slots or self._twinning or self._closed or tier is not self.current \
                    or tier.compiler != CRANELIFT:  # Winch's serves only until Cranelift's is
                return None                          # ready, which gets the twin then
            self._twinning = True
        threading.Thread(target=self._twin, args=(tier,), daemon=True,
                         name="tooliscode-slots").start()
        return None

    def slot_left(self) -> None:
        """A guest that `slot_tier` gave a twin has closed its store."""
        with self._lock:
            self._slotted -= 1
            if self._slotted:
                return
            self._slots_unused_since = time.monotonic()
            if self._reaper or self._closed:
                return
            self._reaper = True
        threading.Thread(target=self._reap, daemon=True, name="tooliscode-slots").start()

    def _reap(self) -> None:
        """Let the slots go once no guest has held one for `SLOTS_IDLE_S` (one such thread at
        a time, which waits as long as they are used)."""
        while True:
            with self._lock:
                left = self._slots_unused_since + SLOTS_IDLE_S - time.monotonic()
                if self._closed or (not self._slotted and left <= 0):
                    break
            time.sleep(max(left, 0.05) if left > 0 else SLOTS_IDLE_S)
        with self._lock:
            self._reaper = False
            if self._closed:
                return
            twins = [t for t in self.all if t.slotted]
            self.all = [t for t in self.all if not t.slotted]
            for tier in self.all:
                tier.slots = None
        for twin in twins:
            self.ticker.remove(twin.engine)
            twin.close()

    def _twin(self, tier: Tier) -> None:
        """Give `tier` its twin in an engine with slots (`Tier.slots`), where the runtime
        asked for them: from the cached compile (mapped, not copied), else from a copy of
        `tier`'s. Without it, guests go on as before."""
        try:
            self._make_twin(tier)
        finally:
            with self._lock:
                self._twinning = False

    def _make_twin(self, tier: Tier) -> None:
        if not self._slots:
            return
        config = wasmtime.Config()
        self._configure(config)
        try:
            use_pool(config, self._slots)
            engine = wasmtime.Engine(config)
        except (wasmtime.WasmtimeError, AttributeError) as exc:  # no address space for the
            # slots, or a build of wasmtime without the pooling allocator
            log.warning("tooliscode: guests start without slots kept ready: %s", exc)
            self._slots = 0
            return
        kind = self._load_args["kind"]
        cached = entry_path(self._wasm, self._key(tier.compiler), self._load_args["prefix"])
        try:
            code = kind.deserialize_file(engine, str(cached)) \
                if cached is not None and cached.is_file() \
                else kind.deserialize(engine, tier.code.serialize())
        except wasmtime.WasmtimeError as exc:  # the compile does not fit the slots
            log.warning("tooliscode: guests start without slots kept ready: %s", exc)
            self._slots = 0
            engine.close()
            return
        twin = Tier(tier.compiler, engine, code, slotted=True)
        self._link(twin)
        self.ticker.add(engine)
        with self._lock:
            if self._closed:
                closing = True
            else:
                closing = False
                self.all.append(twin)
                tier.slots = twin
        if closing:
            self.ticker.remove(engine)
            twin.close()

    def _background(self, engine: wasmtime.Engine) -> None:
        """Compile Cranelift's on this thread alone, at the lowest priority, then take it."""
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):  # not Linux: the compile still runs, just not nice
            pass
        try:
            compiler = self._engine(CRANELIFT, parallel=False)
            try:
                load_module(compiler, self._wasm, self._key(CRANELIFT), log.info,
                            **self._load_args, expected=self._expected[CRANELIFT])
            finally:
                compiler.close()
            tier = self._load(CRANELIFT, engine)
            self.ticker.add(engine)
            self._twin(tier)
            self.current = tier
            log.warning("tooliscode: Cranelift's compile is ready: new guests run on it")
        except Exception:  # noqa: BLE001 - guests go on on Winch's
            log.exception("tooliscode: the background compile with Cranelift failed")
        finally:
            self._ready.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Until the final compile (Cranelift's, unless Winch's alone was asked for) serves
        new guests; True when it does."""
        self._ready.wait(timeout)
        return self.current.compiler == self._final

    def close(self) -> None:
        """Free every compile (no guest may live: see `WatchedRuntime.close`)."""
        self.ticker.close()
        with self._lock:
            self._closed = True
            tiers, self.all = self.all, []
        for tier in tiers:
            tier.close()
