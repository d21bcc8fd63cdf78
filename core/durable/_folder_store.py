"""`FolderStore`: snapshots as files in one folder, shared by the processes of one machine.

Writes go to a temporary file that replaces the old one in one rename, so a reader sees the old
snapshot or the new one, never half of one. Leases are `flock`s on a lock file per key: the
kernel drops them when their process dies, SIGKILL included, so no lease outlives its worker.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import threading
from pathlib import Path

from ._store import SessionStore, StoreUnavailable, version_of

__all__ = ["FolderStore"]


class FolderStore(SessionStore):
    """Snapshots in `folder` (created 0700: they hold whole sessions)."""

    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StoreUnavailable(f"cannot use {self.folder} as a session store: {exc}") from exc
        self._held: dict[str, tuple[str, int]] = {}
        self._lock = threading.Lock()

    def _path(self, key: str, suffix: str) -> Path:
        return self.folder / (hashlib.sha256(key.encode()).hexdigest()[:40] + suffix)

    def get(self, key: str) -> bytes | None:
        return self._read(self._path(key, ".snap"))

    def put(self, key: str, data: bytes) -> None:
        self._write(self._path(key, ".snap"), data)
        self._write(self._path(key, ".ver"), version_of(data).encode())

    def version(self, key: str) -> str | None:
        data = self._read(self._path(key, ".ver"))
        return data.decode() if data is not None else None

    @staticmethod
    def _read(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreUnavailable(f"reading the session store failed: {exc}") from exc

    def _write(self, target: Path, data: bytes, sync: bool = True) -> None:
        try:
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    if sync:
                        os.fsync(f.fileno())
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise StoreUnavailable(f"writing the session store failed: {exc}") from exc

    def delete(self, key: str) -> None:
        self._path(key, ".ver").unlink(missing_ok=True)
        self._path(key, ".snap").unlink(missing_ok=True)
        self._path(key, ".run").unlink(missing_ok=True)

    def mark_running(self, key: str, owner: str) -> str | None:
        path = self._path(key, ".run")
        before = self._read(path)
        self._write(path, owner.encode(), sync=False)  # only a machine that stops loses it
        return before.decode() if before is not None and before.decode() != owner else None

    def clear_running(self, key: str, owner: str) -> None:
        path = self._path(key, ".run")
        if self._read(path) == owner.encode():
            path.unlink(missing_ok=True)

    def acquire(self, key: str, owner: str, ttl_s: float) -> bool:
        with self._lock:
            held = self._held.get(key)
            if held is not None:
                return held[0] == owner
            fd = os.open(self._path(key, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            self._held[key] = (owner, fd)
            return True

    def release(self, key: str, owner: str) -> None:
        with self._lock:
            held = self._held.get(key)
            if held is None or held[0] != owner:
                return
            del self._held[key]
        os.close(held[1])  # closing the descriptor drops the flock

    def close(self) -> None:
        with self._lock:
            held, self._held = self._held, {}
        for _, fd in held.values():
            os.close(fd)
