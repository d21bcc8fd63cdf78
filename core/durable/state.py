"""A live `Session` as a snapshot and back.

On the default runtime the interpreter's memory cannot be copied (its stack is live at every
point), so the guest pickles its variables, carrying what the cells defined by value, and the
session folder comes along as a tar. Restoring starts a new guest with the caller's tools and
loads both; what could not come along is named in the next result.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine.folder import INTERNAL_DIR
from ..runtime import GUEST_DIR, Runtime
from .envelope import SnapshotError, pack

if TYPE_CHECKING:
    from ..engine.session import Session

__all__ = ["capture", "fingerprint", "restore_into", "restore_notice"]

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


def capture(session: Session, call: Any, key: bytes | str | None) -> bytes:
    """Snapshot `session` between cells; `call` sends the guest a command and waits."""
    host_path, guest_path = _paths(session)
    reply = call({"op": "snapshot", "path": guest_path})
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
    return pack({"state": state, "files": _tar_folder(session.workdir)},
                runtime=fingerprint(session.runtime), meta=meta, key=key)


def restore_into(session: Session, parts: dict[str, bytes], meta: dict[str, Any], call: Any
                 ) -> tuple[dict[str, str], tuple[str, ...]]:
    """Load a snapshot's checked `parts` into the fresh `session`; returns what could not
    come along (name -> why) and the names the guest now holds."""
    with tarfile.open(fileobj=io.BytesIO(parts.get("files", b"")), mode="r") as tar:
        tar.extractall(session.workdir, filter="data")
    host_path, guest_path = _paths(session)
    host_path.write_bytes(parts.get("state", b""))
    try:
        reply = call({"op": "restore", "path": guest_path})
    finally:
        host_path.unlink(missing_ok=True)
    if not isinstance(reply, dict) or not reply.get("ok"):
        error = reply.get("error") if isinstance(reply, dict) else reply
        raise SnapshotError(f"the guest could not load the saved state: {error}")
    missing = {**_mapping(meta.get("dropped")), **_mapping(reply.get("failed"))}
    names = reply.get("names")
    return missing, tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else ()


def restore_notice(missing: dict[str, str], announce: bool) -> str | None:
    """What the model reads after a restore: that it happened (when `announce`), and what
    it must make again."""
    text = ("This session was restored from a snapshot: its variables, functions, classes, "
            "imports and files are back." if announce else "")
    if missing:
        listed = "; ".join(f"{name}: {why}" for name, why in sorted(missing.items())[:20])
        text += (" " if text else "This session moved to another worker. ") + (
            f"These could not come along and must be made again: {listed}.")
    return text or None


def _mapping(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


