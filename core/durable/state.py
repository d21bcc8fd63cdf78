"""A live `Session` as a snapshot and back.

On the default runtime the interpreter's memory cannot be copied (its stack is live at every
point), so the guest pickles its variables, carrying what the cells defined by value, and the
session folder comes along as a tar. Restoring starts a new guest with the caller's tools and
loads both; what could not come along is named in the next result. On the data runtime the
interpreter itself is copied (`exact.py`).
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine.folder import INTERNAL_DIR
from ..engine.limits import Limits
from ..runtime import GUEST_DIR, Runtime
from ..runtime.renew import empty_folder
from . import exact
from .envelope import SnapshotError, pack, unpack

if TYPE_CHECKING:
    from ..engine.session import Session
    from ..engine.worker import Worker

__all__ = ["Opened", "capture", "fingerprint", "open_snapshot", "reload", "restore_notice"]

_STATE = "state.bin"


def fingerprint(runtime: Runtime) -> str:
    """Which interpreter a snapshot belongs to: its state restores only there."""
    return f"{runtime.name}:{getattr(runtime, 'fingerprint', '')}"


def _paths(session: Session) -> tuple[Path, str]:
    folder = session.workdir / INTERNAL_DIR
    folder.mkdir(exist_ok=True)
    return folder / _STATE, f"{GUEST_DIR}/{INTERNAL_DIR}/{_STATE}"


def _tar_folder(root: Path) -> bytes:
    """The session folder's files and folders; links are left out (never followed)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if rel.parts[0] == INTERNAL_DIR or path.is_symlink():
                continue
            if path.is_dir() or path.is_file():
                tar.add(path, arcname=str(rel), recursive=False)
    return out.getvalue()


def capture(session: Session, worker: Worker, key: bytes | str | None) -> bytes:
    """Snapshot `session` between cells: exactly on the data runtime when its guest started
    from the start image (see `exact.py`), else by its variables."""
    files = _tar_folder(session.workdir)
    runtime = fingerprint(session.runtime)
    image = exact.image_of(worker) if session.runtime.turn_based else None
    if image is not None:
        return exact.capture(session, worker, image, files, runtime, key)
    host_path, guest_path = _paths(session)
    reply = worker.call({"op": "snapshot", "path": guest_path})
    if not isinstance(reply, dict) or not reply.get("ok"):
        error = reply.get("error") if isinstance(reply, dict) else reply
        raise SnapshotError(f"the guest could not save its state: {error}")
    try:
        state = host_path.read_bytes()
    finally:
        host_path.unlink(missing_ok=True)
    dropped = reply.get("dropped") if isinstance(reply.get("dropped"), dict) else {}
    meta = {"dropped": {str(k): str(v) for k, v in dropped.items()},
            "names": list(session.names)}
    return pack({"state": state, "files": files}, runtime=runtime, meta=meta, key=key)


@dataclass
class Opened:
    """A snapshot checked for this runtime and machine, before any guest starts."""

    parts: dict[str, Any]
    meta: dict[str, Any]
    exact: exact.Plan | None

    @property
    def first(self) -> Any:
        """For an exact snapshot: what the new session does with its first guest before
        giving it the tools (see `exact.Plan.first`)."""
        return self.exact.first if self.exact is not None else None

    def into(self, session: Session, worker: Worker, first_reply: Any
             ) -> tuple[dict[str, str], tuple[str, ...]]:
        """Load the snapshot into the fresh `session`; returns what could not come along
        (name -> why) and the names the guest now holds. `first_reply`: what the guest said
        to the command `first` gave."""
        with tarfile.open(fileobj=io.BytesIO(self.parts.get("files", b"")), mode="r:") as tar:
            tar.extractall(session.workdir, filter="data")
        if self.exact is not None:
            return self.exact.outcome(first_reply)
        host_path, guest_path = _paths(session)
        host_path.write_bytes(self.parts.get("state", b""))
        try:
            reply = worker.call({"op": "restore", "path": guest_path})
        finally:
            host_path.unlink(missing_ok=True)
        if not isinstance(reply, dict) or not reply.get("ok"):
            error = reply.get("error") if isinstance(reply, dict) else reply
            raise SnapshotError(f"the guest could not load the saved state: {error}")
        missing = {**_mapping(self.meta.get("dropped")), **_mapping(reply.get("failed"))}
        names = reply.get("names")
        return missing, tuple(n for n in names if isinstance(n, str)) \
            if isinstance(names, list) else ()


def open_snapshot(blob: bytes, runtime: Runtime, limits: Limits, key: bytes | str | None
                  ) -> Opened:
    """Check `blob` (integrity, runtime, version, and for an exact one its image and memory)
    before anything of it runs; `SnapshotError` otherwise."""
    parts, meta = unpack(blob, runtime=fingerprint(runtime), key=key)
    plan = exact.plan(parts, meta, limits) if meta.get("kind") == exact.KIND else None
    return Opened(parts, meta, plan)


def reload(session: Session, blob: bytes, key: bytes | str | None = None) -> bool:
    """Load a snapshot of variables into `session`'s live guest rather than a new one (a
    conversation come back to a worker that still has its interpreter: no new guest to
    boot). Its cells' state is forgotten and its folder emptied first, so what remains is the
    snapshot's, and the next result names what could not come along. False, with nothing
    done, for an exact snapshot: that one is a whole interpreter, mapped into a new guest."""
    opened = open_snapshot(blob, session.runtime, session.limits, key)
    if opened.exact is not None:
        return False
    with session._turn:
        worker = session._ensure_worker()
        reply = worker.call({"op": "reset"})
        if not isinstance(reply, dict) or not reply.get("ok"):
            raise SnapshotError(f"the guest could not forget its state: {reply}")
        session._names = ()
        if not empty_folder(session.workdir):
            raise SnapshotError("the session folder could not be emptied for the snapshot's")
        missing, session._names = opened.into(session, worker, None)
        notice = restore_notice(missing, announce=False)
        if notice:
            session._notices.append(notice)
    return True


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


