"""Reading the session folder from the host without trusting what the guest put there.

The guest may create symlinks pointing anywhere on the host. Nothing here follows one:
listing uses `lstat`, and opening walks the path one component at a time with
`O_NOFOLLOW` relative to the folder's own descriptor.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .._folders import walk

__all__ = ["FileInfo", "list_files", "read_file", "snapshot", "changed", "INTERNAL_DIR"]

INTERNAL_DIR = ".tooliscode"
"""Inside the session folder: where cut output is saved. Left out of change reports."""


@dataclass(frozen=True)
class FileInfo:
    path: str
    """Relative to the session folder, with `/` separators."""
    size: int
    mtime_ns: int
    is_symlink: bool = False


def list_files(root: Path, limit: int = 10_000) -> list[FileInfo]:
    """Regular files and symlinks (not followed) under `root`, at most `limit` of them."""
    found: list[FileInfo] = []
    for path, entry in walk(root, ordered=True):
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            found.append(FileInfo(path, st.st_size, st.st_mtime_ns, stat.S_ISLNK(st.st_mode)))
            if len(found) >= limit:
                break
    return found


def _parts(relpath: str) -> list[str]:
    p = PurePosixPath(relpath.replace("\\", "/"))
    if p.is_absolute():
        p = p.relative_to("/")
        if p.parts[:1] == ("session",):
            p = PurePosixPath(*p.parts[1:])
    parts = [x for x in p.parts if x not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"not a path inside the session folder: {relpath!r}")
    return parts


def read_file(root: Path, relpath: str, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file in the folder; refuses symlinks anywhere on the path."""
    parts = _parts(relpath)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    dir_flags = flags | getattr(os, "O_DIRECTORY", 0)
    fd = os.open(root, dir_flags)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, dir_flags, dir_fd=fd)
            os.close(fd)
            fd = nxt
        file_fd = os.open(parts[-1], flags | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
    except OSError as exc:
        raise FileNotFoundError(f"{relpath}: no such regular file in the session folder "
                                f"(symlinks are not followed): {exc.strerror}") from None
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise FileNotFoundError(f"{relpath}: not a regular file")
        return f.read() if max_bytes is None else f.read(max_bytes)


Snapshot = dict[str, tuple[int, int]]


def snapshot(root: Path, limit: int = 5_000) -> Snapshot:
    """(size, mtime) of every file, by path: taken before and after each cell, so it skips
    sorting and the internal folder, and stops at `limit` entries."""
    found: Snapshot = {}
    for path, entry in walk(root, skip=INTERNAL_DIR):
        try:
            if entry.is_dir(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        found[path] = (st.st_size, st.st_mtime_ns)
        if len(found) >= limit:
            break
    return found


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths created or modified between two snapshots."""
    if after == before:
        return []
    return sorted(p for p, sig in after.items() if before.get(p) != sig)
