"""What the runtimes made of one WASI preview-1 module share (the data runtime and a
`python.wasm` command of the user's own): the console and the session folder's quota, kept
by shadowing the imports that reach them (see `shadow.py`).
"""

from __future__ import annotations

import logging
import struct
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import wasmtime

from ..base import GuestSpec
from .capi import Memory, i32, i64
from .host_functions import HostBody, host_function
from .shadow import Passthrough, define_shadow, passthrough_module
from .tiers import Tier, Tiers
from .wasm_file import WasmFile
from .watched import WatchedGuest, WatchedRuntime

__all__ = ["WasmtimeInstance", "WasmtimeRuntimeBase"]

log = logging.getLogger("tooliscode")

_O_CREAT, _O_TRUNC = 1, 8
_U32 = struct.Struct("<I")
_ctypes = wasmtime._ffi.ctypes


class WasmtimeInstance(WatchedGuest):
    """One CPython guest made of a preview-1 module, in its own wasmtime store. A runtime's
    own instance says how the guest is configured and started."""

    fds: set[int] | None = None
    """The descriptors the guest opened and has not closed, where they are kept count of."""
    counts_opens = False
    """Whether `opened` is kept (it needs fd_close shadowed): opens are then limited."""

    def track(self, name: str, fd: int, other: int = 0) -> None:
        """A descriptor was opened (`path_open`), closed or moved (see `_hostfuncs.tracked`)."""

    def __init__(self, runtime: WasmtimeRuntimeBase, spec: GuestSpec):
        tier = runtime.tiers.current
        super().__init__(runtime, spec, tier)
        self._pending: bytes | None = None
        self._store.set_wasi(self._wasi_config(spec))
        self._instance = tier.linker.instantiate(self._store, tier.code)
        memory = self._instance.exports(self._store)["memory"]
        self._memory_handle = memory  # keeps the struct _memory points into alive
        self._memory = _ctypes.addressof(memory._memory)
        self._passthrough = Passthrough(tier.engine, tier.passthrough, self._store, memory,
                                        runtime.forwarded)

    def _console(self, caller: int, args: int) -> int:
        """A write to descriptor 1 or 2, handed to `output` here, on the guest's thread.

        wasmtime's own custom stdout runs its Python callback on a runtime thread that can
        outlive the interpreter at exit, so the guest's console never reaches WASI at all."""
        mem = Memory(caller, self._memory)
        data = mem.gather(i32(args, 1), i32(args, 2))
        mem.write(mem.check(i32(args, 3), 4), _U32.pack(len(data)))
        try:
            if self.output is not None:
                self.output("stdout" if i32(args, 0) == 1 else "stderr", data)
        except Exception:  # noqa: BLE001
            log.exception("tooliscode: output sink failed")
        return 0

    @abstractmethod
    def _wasi_config(self, spec: GuestSpec) -> wasmtime.WasiConfig:
        """The guest's arguments, environment and preopened folders."""

    def _allowed(self, name: str, caller: int, args: int) -> bool:
        """May this call that could change the session folder go ahead? (It counts against
        the quota; the first change since `arm` is announced to `on_change`.)"""
        if name in ("fd_write", "fd_pwrite") and i32(args, 0) < 3:
            return True  # the console: never the disk
        if name == "path_open" and not i32(args, 4) & (_O_CREAT | _O_TRUNC):
            return True  # opening to read (writes through it are seen at fd_write)
        self.note_change()
        quota = self._quota
        if name in ("fd_write", "fd_pwrite"):
            nbytes = Memory(caller, self._memory).iovec_total(i32(args, 1), i32(args, 2))
            return quota.allow(nbytes=nbytes)
        if name == "fd_allocate":
            return quota.allow(nbytes=i64(args, 2))
        if name == "fd_filestat_set_size":
            return quota.allow(nbytes=i64(args, 1))
        if name == "path_rename" or (name == "path_open" and not i32(args, 4) & _O_CREAT):
            return True
        return quota.allow(entries=1)

    def _release(self) -> None:
        self._instance = self._passthrough = self._memory_handle = None  # type: ignore[assignment]


class WasmtimeRuntimeBase(WatchedRuntime):
    """A runtime made of one preview-1 module, some of its WASI imports shadowed: the
    subclass sets `wasm` and calls `_compile`."""

    wasm: WasmFile
    forwarded: tuple[str, ...]
    """What the passthrough module hands on to WASI (the shadows' real functions)."""

    @property
    def fingerprint(self) -> str:  # type: ignore[override]
        """What saved state and guest-side caches (precompiled guest modules) are keyed by."""
        return f"{self.name}:{self.wasm.sha256}"

    @property
    def module(self) -> wasmtime.Module:
        return self.tiers.current.code

    def _compile(self, flags: str, configure: Callable[[wasmtime.Config], None], tick_s: float,
                 expected: dict[str, str], *, prefix: str = "python",
                 shadows: Callable[[wasmtime.Module], dict[str, HostBody]],
                 forwarded: Callable[[wasmtime.Module], tuple[str, ...]],
                 extra: Callable[[wasmtime.Linker], Any] | None = None,
                 transform: Callable[[bytes], bytes | None] | None = None) -> None:
        """Compile the module (see `tiers.py`) and link each compile: WASI with `shadows` in
        place of the functions they name, and what `extra` defines."""

        def link(tier: Tier) -> None:
            module = tier.code
            self.forwarded = forwarded(module)
            linker = wasmtime.Linker(tier.engine)
            linker.define_wasi()
            linker.allow_shadowing = True
            keep = [define_shadow(linker, module, name, host_function(name, body))
                    for name, body in shadows(module).items()]
            if extra is not None:
                keep.append(extra(linker))
            tier.linker, tier.callbacks = linker, keep
            tier.passthrough = passthrough_module(tier.engine, module, self.forwarded)

        self._start_watching()
        self.tiers = Tiers(self.wasm, flags, configure=configure, link=link,
                           ticker_period=tick_s, prefix=prefix, kind=wasmtime.Module,
                           what="the Python runtime", expected=expected, transform=transform)

    @abstractmethod
    def _make(self, spec: GuestSpec) -> WasmtimeInstance:
        """A new instance of this runtime's own kind."""
