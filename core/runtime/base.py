"""The runtime boundary: how a guest interpreter is started and how its frames reach the host.

Like an httpx transport, a `Runtime` is the one swappable piece under a session. It knows
how to start CPython in some sandbox and carry opaque request frames from the guest to a
host `FrameHandler` and the answer back. Everything above it (the cell protocol, tools,
limits policy) is the same for every runtime.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import SnapshotError

__all__ = ["GuestSpec", "GuestTrap", "Instance", "Runtime", "FrameHandler", "OutputSink",
           "GUEST_DIR", "SavedMemory", "MemoryPlan", "CommitPoint"]

GUEST_DIR = "/session"
"""Where the session folder appears inside the guest; it is also the working directory."""

FrameHandler = Callable[[bytes], bytes]
"""Called on the guest's thread with one request frame; returns the answer frame."""

OutputSink = Callable[[str, bytes], None]
"""Receives bytes the guest wrote to its raw stdout or stderr descriptor ("stdout"/"stderr")."""

TrapReason = Literal["timeout", "cancelled", "stack", "exit", "crash", "abandoned"]


class GuestTrap(Exception):
    """The guest stopped for good: its state is gone and it must be replaced."""

    def __init__(self, reason: TrapReason, message: str):
        super().__init__(message)
        self.reason: TrapReason = reason
        self.message = message


@dataclass
class GuestSpec:
    """What a new guest gets: its folder, its memory, its boot code."""

    workdir: Path
    memory_bytes: int
    boot_source: str
    """Python source run as `python -c`; it speaks to the host through `transport_source`."""
    disk_bytes: int | None = None
    """Most bytes the session folder may hold (None: unbounded)."""
    disk_entries: int | None = None
    """Most files, folders and links the session folder may hold."""
    extra_env: dict[str, str] = field(default_factory=dict)
    boot_reply: bytes | None = None
    """The host's answer to the guest's boot request, for a runtime that boots spare guests
    of its own (the data runtime's memory image)."""
    ahead: bool = False
    """Made ahead of need (a pool's guest): it leaves the runtime's slots, if it keeps any,
    to guests wanted now."""


@dataclass
class SavedMemory:
    """A guest's interpreter as bytes (an exact snapshot's contents): `parts` to keep, `meta`
    that says what they need to come back (kept beside them, JSON), and the names of parts
    better `stored` as they are than compressed."""

    parts: dict[str, Any]
    meta: dict[str, Any]
    stored: dict[str, Any] = field(default_factory=dict)


class MemoryPlan(ABC):
    """Saved memory checked against this machine (its runtime's `open_memory`), ready to be
    put into a new guest with `Instance.load_memory`."""

    size: int
    """Bytes of linear memory the interpreter needs."""


class CommitPoint(ABC):
    """A guest's interpreter as it was at a commit (`Instance.commit`), held outside the
    guest: what a session whose cell was stopped comes back to, in a new guest."""

    @abstractmethod
    def plan(self) -> MemoryPlan:
        """The committed memory, for `Instance.load_memory` of a new guest."""

    @property
    @abstractmethod
    def ready(self) -> bool:
        """False while a commit into it is under way, or after one failed: not to be used."""

    @property
    @abstractmethod
    def size_bytes(self) -> int:
        """Host memory it holds."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Free what it holds (it is not used again)."""


class Instance(ABC):
    """One live guest interpreter. `run` drives it on the calling thread until it ends.

    Threads: `run`, `turn`, `arm`, `disarm`, `configure` and the optional capabilities below
    are called on the guest's own thread (between turns, for the capabilities); `stop` from
    any thread; `close` once the guest no longer runs.
    """

    handler: FrameHandler | None
    output: OutputSink | None
    on_change: Callable[[], None] | None = None
    """Called on the guest's thread just before the first operation since `arm` that may
    change the session folder (a write, a new file or folder, a rename)."""

    @abstractmethod
    def run(self) -> None:
        """Run the guest to its end on this thread, calling `handler` for every frame.

        Raises `GuestTrap` when the guest trapped, exited or was stopped.
        """

    first_answer_limit: int = 0
    """Most bytes `turn` can give the guest with its source as the answer to its first
    request (one crossing fewer per turn); 0 where it cannot."""

    def turn(self, source: str, first: bytes | None = None) -> None:
        """Run `source` in the booted guest until it returns (turn-based instances only);
        `first`, at most `first_answer_limit` bytes, answers its first request.

        Raises `GuestTrap` like `run`."""
        raise NotImplementedError(f"{type(self).__name__} is not turn-based")

    @abstractmethod
    def arm(self, seconds: float | None) -> None:
        """From the guest's thread: from now, stop the guest after `seconds` of wall time
        (`None` checks only for `stop`). Call `disarm` when the guest waits in the host."""

    @abstractmethod
    def disarm(self) -> None:
        """From the guest's thread: the guest is parked in the host; no deadline applies."""

    def park(self) -> None:  # noqa: B027 - nothing watched, nothing to stop watching
        """From the guest's thread, when it starts waiting in the host for a decision (a
        paused cell, perhaps for hours): stop watching it until `unpark`, so that no ticker
        runs meanwhile. `stop` still works."""

    def unpark(self, waited: float) -> None:  # noqa: B027 - no deadline, nothing to move
        """From the guest's thread, when a parked guest goes on after `waited` seconds:
        watch it again, its deadline that much later."""

    @abstractmethod
    def stop(self, reason: TrapReason) -> None:
        """From any thread: make the guest trap at its next check (within a few ms)."""

    @abstractmethod
    def configure(self, memory_bytes: int, disk_bytes: int | None,
                  disk_entries: int | None) -> None:
        """From the guest's thread: change the bounds of a guest that already runs (a pooled
        guest adopted by a session with its own limits)."""

    @property
    def outdated(self) -> bool:
        """True when its runtime has a better compile ready than the one this guest runs (a
        pool hands such a guest to no new session). Any thread."""
        return False

    def overran_stack(self) -> bool:
        """True when the guest's C stack went past its end (its memory may be damaged, so
        the guest must be replaced), where the runtime can tell."""
        return False

    @abstractmethod
    def take_notices(self) -> list[str]:
        """Things the runtime refused since the last call (a full folder), in words."""

    @abstractmethod
    def close(self) -> None:
        """Free what the instance holds; it must not be running."""

    # -- optional capabilities: what only some runtimes can do. The defaults say "not
    # supported", so callers ask the instance instead of probing for attributes.

    @property
    def idle_work(self) -> bool:
        """Whether `idle` has work to do."""
        return False

    def idle(self) -> None:  # noqa: B027 - optional hook
        """From the guest's thread, between turns, once it has waited a while for a command:
        work that can wait (giving back memory its start left resident). Returns soon."""

    @property
    def commits(self) -> bool:
        """Whether `commit` can keep this guest's interpreter (else the session keeps a pickled
        copy of its variables after each cell)."""
        return False

    def commit(self) -> CommitPoint | None:
        """Between turns, after a cell that ended: the interpreter as it is now, as the
        point a stopped cell's session comes back to; later commits update the same point.
        None where the runtime cannot (its session keeps a pickled copy of the variables
        instead)."""
        return None

    def drop_commits(self) -> None:  # noqa: B027 - optional hook
        """Between turns: make no more commits, and let go of the point (it grew too big)."""

    def save_memory(self) -> SavedMemory | None:
        """Between turns: the whole interpreter, to be put back exactly into a new guest
        (generators, closures and random state included). None where this guest cannot:
        its runtime keeps a live stack, or it did not start from a known image."""
        return None

    def load_memory(self, plan: MemoryPlan) -> None:
        """Before the guest's first turn: become the interpreter `plan` holds."""
        raise SnapshotError(f"{type(self).__name__} cannot load a saved interpreter")

    def keep_baseline(self, grow: bool = True) -> bool:
        """Between turns, right after setup: remember this state as what `renew` returns
        to (a later call takes the place of an earlier one). False where the guest cannot be
        renewed (it is then closed after a run). `grow`: the guest may first take room to
        grow into, which is then part of what comes back (not for a pooled guest, whose
        session's memory limit is not known yet)."""
        return False

    def warmed(self) -> None:  # noqa: B027 - optional hook
        """Between turns, after a pooled guest's warm-up: that turn only warmed its pages and
        caches, so a `renew` need not take it again (the guest is as good without it)."""

    def renew(self, workdir: Path, restart: bool = True) -> bool:
        """Between turns: make the guest what it was at `keep_baseline`, its files closed
        and `workdir` emptied, for another run. False when it cannot be: close it then.
        `restart`: where its memory cannot be written back, the guest may start again and
        take its turns up to the baseline once more (False: it is closed instead)."""
        return False


class Runtime(ABC):
    """Starts guests. One runtime object serves a whole process."""

    name: str
    python_note: str = "Python 3.12 (standard library only)"
    """Which Python the guest is, and which libraries it has: for the code tool's guide."""
    min_memory_bytes: int = 32 * 1024 * 1024
    """The smallest memory limit a guest can start with."""
    thread_stack: int | None = None
    """Native stack size for the thread that runs a guest (None: the platform's default)."""
    turn_based: bool = False
    """True when its instances' `run` only boots the guest and each command then runs in its
    own `turn`: between turns no wasm stack is live, so the guest's memory is its whole state."""
    pool_size: int = 2
    """How many booted guests a session pool keeps ready for this runtime."""
    exact: bool = False
    """True when between turns a guest's memory is its whole state, which `save_memory` can
    take and a new guest put back (exact snapshots)."""
    renews: bool = False
    """True when its guests can be made as new for another run (`keep_baseline`, `renew`)."""
    baked_guest: bool = False
    """True when its guests start with the guest package imported and warm (built into the
    runtime): their boot asks the host for nothing but their setup."""

    fingerprint: str = ""
    """What a guest's saved state is tied to besides `name` (the module's hash, say)."""

    @property
    @abstractmethod
    def transport_source(self) -> str:
        """Guest-side Python defining `exchange(request: bytes) -> bytes` for this runtime."""

    @abstractmethod
    def instantiate(self, spec: GuestSpec) -> Instance:
        """Create a guest ready to `run`; it has not started executing yet."""

    def open_memory(self, parts: dict[str, Any], meta: dict[str, Any],
                    memory_limit: int) -> MemoryPlan:
        """Check saved memory (`Instance.save_memory`) against this machine before any guest
        starts: `SnapshotError` when it cannot come back here."""
        raise SnapshotError(f"the {self.name} runtime cannot restore a whole interpreter")

    def warm_up(self) -> bool:
        """Do the slow first-use work now (for container builds); False if some of it could
        not be done and guests will start the slow way."""
        return True

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release process-wide resources (threads, engines)."""
