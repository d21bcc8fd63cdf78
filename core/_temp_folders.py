"""Where the folders we make live, and how they go away even when their process did not clean up.

Every folder this package makes in the temp directory sits inside one folder per process,
`tooliscode-<pid>-<random>`. That folder holds a lock file its process keeps locked while it
lives (the kernel lets go of the lock when the process ends, however it ends) and a marker
naming the owner: its pid and the process's start time. Normal exit removes the process
folder, with whatever a spare interpreter still booting put in it. A process killed before
it could leaves it behind; the next process that makes one removes such folders, but only
those whose owner is provably gone: the lock is free and no live process has that pid and
start time. Folders without our marker (a caller's own `workdir`, anything else) are never
touched.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: only pid and start time prove an owner gone
    fcntl = None  # type: ignore[assignment]

__all__ = ["PREFIX", "new_folder", "remove_own", "sweep"]

log = logging.getLogger("tooliscode")

PREFIX = "tooliscode-"
_MARK = "owner.json"
_LOCK = "owner.lock"
_lock = threading.Lock()
_own: tuple[int, Path, int] | None = None
"""(pid, process folder, descriptor holding its lock) of this process."""
_closing = False


def new_folder(kind: str = "session") -> Path:
    """A new empty folder of ours; it is gone, at the latest, when this process ends."""
    return Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=_process_folder()))


def _start_time(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot), or None where that is unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the command may contain spaces and parens
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int, started: str | None) -> bool:
    """Whether the process that wrote a marker (`pid`, `started`) may still be running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, under another user
        pass
    now = _start_time(pid)
    return started is None or now is None or now == started


def _process_folder() -> Path:
    global _own
    with _lock:
        pid = os.getpid()
        if _own is not None and _own[0] == pid and _own[1].is_dir():
            return _own[1]
        if _own is not None and _own[0] == pid:  # removed under us: start another
            with contextlib.suppress(OSError):
                os.close(_own[2])
        if _closing:
            raise RuntimeError("tooliscode is shutting down: no new folders")
        root = Path(tempfile.gettempdir())
        sweep(root)
        folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{pid}-", dir=root))
        fd = os.open(folder / _LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # The marker comes last and whole (a rename): a folder with one is locked already.
        mark = folder / f".{_MARK}.tmp"
        mark.write_text(json.dumps({"pid": pid, "started": _start_time(pid)}), "utf-8")
        mark.rename(folder / _MARK)
        _own = (pid, folder, fd)
        return folder


def sweep(root: Path) -> list[Path]:
    """Remove the process folders in `root` whose owner is provably gone; returns them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    uid = os.getuid() if hasattr(os, "getuid") else None
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid):
            continue
        if _owner_gone(Path(entry.path)):
            removed.append(Path(entry.path))
    return removed


def _owner_gone(folder: Path) -> bool:
    """Remove `folder` if its owner is provably gone (under its lock, so only one sweeper
    does); True if it was removed."""
    try:
        marker = json.loads((folder / _MARK).read_text("utf-8"))
        pid, started = int(marker["pid"]), marker.get("started")
    except (OSError, ValueError, TypeError, KeyError):
        return False  # no marker of ours (or one still being written): not provably ours
    if pid == os.getpid():
        return False
    try:
        fd = os.open(folder / _LOCK, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False  # held: its owner lives
        if _alive(pid, started if isinstance(started, str) else None):
            return False
        shutil.rmtree(folder, ignore_errors=True)
        return not folder.exists()
    finally:
        os.close(fd)


def remove_own() -> None:
    """Remove this process's folder and everything in it (at exit, after the sessions)."""
    global _own, _closing
    with _lock:
        _closing = True
        own, _own = _own, None
    if own is None or own[0] != os.getpid():  # a forked child leaves its parent's alone
        return
    shutil.rmtree(own[1], ignore_errors=True)
    with contextlib.suppress(OSError):
        os.close(own[2])


atexit.register(remove_own)
