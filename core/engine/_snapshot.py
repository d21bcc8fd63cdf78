"""A session's state as bytes and back.

On the default runtime the interpreter's memory cannot be copied (its stack is live at every
point), so the guest pickles its variables, carrying what the cells defined by value, and the
session folder comes along as a tar. Restoring starts a new guest with the caller's tools and
loads both; what could not come along is named in the next result. Where the runtime can save
the interpreter itself (`Instance.save_memory`: the data runtime), that is what is kept, and
it comes back exactly.

Everything here runs for a `Session`, under its turn lock, on its live guest: the session
calls in with what it has and keeps what comes back.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._folders import walk
from ..errors import SnapshotError
from ..runtime import GUEST_DIR, MemoryPlan, Runtime
from ._envelope import pack, unpack
from ._folder import INTERNAL_DIR
from ._points import Checkpoint
from ._worker import Worker

__all__ = ["SessionState", "capture", "restore_notice", "snapshot_runtime"]

_STATE = "state.bin"
_MEMORY = "memory"
"""The snapshot kind whose parts are a saved interpreter (`SavedMemory`)."""


def snapshot_runtime(runtime: Runtime) -> str:
    """Which interpreter a snapshot belongs to: its state restores only there."""
    return f"{runtime.name}:{runtime.fingerprint}"


def _paths(workdir: Path) -> tuple[Path, str]:
    folder = workdir / INTERNAL_DIR
    folder.mkdir(exist_ok=True)
    return folder / _STATE, f"{GUEST_DIR}/{INTERNAL_DIR}/{_STATE}"


def _tar_folder(root: Path) -> bytes:
    """The session folder's files and folders; links are left out (never followed)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for rel, entry in walk(root, skip=INTERNAL_DIR, ordered=True):
            if rel == INTERNAL_DIR or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False):
                tar.add(entry.path, arcname=rel, recursive=False)
    return out.getvalue()


def capture(worker: Worker, runtime: Runtime, workdir: Path, names: tuple[str, ...],
            key: bytes | str | None) -> bytes:
    """A snapshot of the guest of `worker`, between cells: the interpreter itself where the
    runtime can save it, else its variables."""
    files = _tar_folder(workdir)
    saved = worker.between_turns(lambda instance: instance.save_memory()) \
        if runtime.exact else None
    if saved is not None:
        return pack({"files": files, **saved.parts}, runtime=snapshot_runtime(runtime),
                    meta={**saved.meta, "names": list(names)}, key=key, stored=saved.stored)
    host_path, guest_path = _paths(workdir)
    reply = worker.call({"op": "snapshot", "path": guest_path})
    if not isinstance(reply, dict) or not reply.get("ok"):
        error = reply.get("error") if isinstance(reply, dict) else reply
        raise SnapshotError(f"the guest could not save its state: {error}")
    try:
        state = host_path.read_bytes()
    finally:
        host_path.unlink(missing_ok=True)
    meta = {"dropped": _mapping(reply.get("dropped")), "names": list(names)}
    return pack({"state": state, "files": files}, runtime=snapshot_runtime(runtime), meta=meta,
                key=key)


@dataclass
class SessionState:
    """A snapshot checked for a runtime and this machine, before any guest starts: what a
    `Session` is started from (`Session(..., state=...)`; `Session.restore` does both)."""

    parts: dict[str, Any]
    meta: dict[str, Any]
    memory: MemoryPlan | None = None
    """The saved interpreter, when the snapshot holds one: it is put into the new guest
    before the guest runs at all."""
    announce: bool = True
    """Whether the first result says that the session was restored (it always says what
    could not come along)."""

    @classmethod
    def open(cls, blob: bytes, runtime: Runtime, memory_limit: int,
             key: bytes | str | None = None, *, announce: bool = True) -> SessionState:
        """Check `blob` (integrity, runtime, version, and for a saved interpreter its image
        and memory) before anything of it runs; `SnapshotError` otherwise."""
        parts, meta = unpack(blob, runtime=snapshot_runtime(runtime), key=key)
        memory = runtime.open_memory(parts, meta, memory_limit) \
            if meta.get("kind") == _MEMORY else None
        return cls(parts, meta, memory, announce)

    @property
    def names(self) -> tuple[str, ...]:
        """The global names the snapshot's guest held."""
        names = self.meta.get("names")
        return tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else ()

    def first(self, worker: Worker, setup: dict[str, Any]) -> dict[str, Any]:
        """Make the new guest of `worker` the saved interpreter, before it runs; returns the
        command that gives it the session's tools and limits without clearing it."""
        memory = self.memory
        assert memory is not None
        try:
            worker.between_turns(lambda instance: instance.load_memory(memory))
        except Exception as exc:  # noqa: BLE001 - a damaged delta, or memory not to be had
            worker.stop("crash")  # its memory may be half written: it must not run
            raise SnapshotError(f"the snapshot's memory could not be applied: {exc}") from None
        return {**setup, "op": "rebind"}

    def load(self, worker: Worker, workdir: Path, first_reply: Any
             ) -> tuple[dict[str, str], tuple[str, ...]]:
        """Load the snapshot into the fresh guest of `worker`; returns what could not come
        along (name -> why) and the names the guest now holds. `first_reply`: what the guest
        said to the command `first` gave (a saved interpreter only)."""
        files = self.parts.get("files")
        if files is not None:  # a rollback has none: the folder stays as it is
            with tarfile.open(fileobj=io.BytesIO(files), mode="r:") as tar:
                tar.extractall(workdir, filter="data")
        if self.memory is not None:
            return self._rebound(first_reply)
        host_path, guest_path = _paths(workdir)
        host_path.write_bytes(self.parts.get("state", b""))
        try:
            reply = worker.call({"op": "restore", "path": guest_path})
        finally:
            host_path.unlink(missing_ok=True)
        if not isinstance(reply, dict) or not reply.get("ok"):
            error = reply.get("error") if isinstance(reply, dict) else reply
            raise SnapshotError(f"the guest could not load the saved state: {error}")
        missing = {**_mapping(self.meta.get("dropped")), **_mapping(reply.get("failed"))}
        # What was loaded is the point a stopped cell comes back to: no need to pickle it again.
        worker.points.keep(Checkpoint(self.parts.get("state", b""),
                                     _mapping(self.meta.get("dropped"))))
        names = reply.get("names")
        return missing, tuple(n for n in names if isinstance(n, str)) \
            if isinstance(names, list) else ()

    def _rebound(self, reply: Any) -> tuple[dict[str, str], tuple[str, ...]]:
        if not isinstance(reply, dict) or not reply.get("ok"):
            error = reply.get("error") if isinstance(reply, dict) else reply
            raise SnapshotError(f"the restored guest could not take the tools: {error}")
        lost, names = reply.get("lost"), reply.get("names")
        return (_mapping(lost), tuple(n for n in names if isinstance(n, str))
                if isinstance(names, list) else self.names)

    def notice(self, missing: dict[str, str]) -> str | None:
        """What the model reads after the restore (see `restore_notice`)."""
        return restore_notice(missing, self.announce, whole=self.memory is not None)


def restore_notice(missing: dict[str, str], announce: bool, whole: bool = False) -> str | None:
    """What the model reads after a restore: that it happened (when `announce`), and what
    it must make again. `whole`: the interpreter itself came back (an exact snapshot)."""
    text = "" if not announce else (
        "This session was restored from a snapshot of the whole interpreter: every object, "
        "import and the files are back as they were." if whole else
        "This session was restored from a snapshot: its variables, functions, classes, "
        "imports and files are back.")
    if missing:
        listed = "; ".join(f"{name}: {why}" for name, why in sorted(missing.items())[:20])
        text += (" " if text else "This session moved to another worker. ") + (
            f"These could not come along and must be made again: {listed}.")
    return text or None


def _mapping(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
