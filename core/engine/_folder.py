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

__all__ = ["FileInfo", "list_files", "read_file", "write_new_file", "snapshot", "changed",
           "INTERNAL_DIR", "OUTPUT", "SNAPSHOT_FILES"]

INTERNAL_DIR = ".tooliscode"
"""Inside the session folder: where cut output is saved. Left out of change reports."""
OUTPUT = f"{INTERNAL_DIR}/output"
"""Where texts cut for the model (output, errors, values, tools' messages) are saved whole."""


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


_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = _FLAGS | getattr(os, "O_DIRECTORY", 0)


def _parent(root: Path, parts: list[str], create: bool = False) -> int:
    """A descriptor of the folder holding `parts[-1]`, reached without following a symlink
    (folders made on the way when `create`)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            if create:
                try:
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(root: Path, relpath: str, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file in the folder; refuses symlinks anywhere on the path."""
    parts = _parts(relpath)
    try:
        fd = _parent(root, parts)
        try:
            file_fd = os.open(parts[-1], _FLAGS | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise FileNotFoundError(f"{relpath}: no such regular file in the session folder "
                                f"(symlinks are not followed): {exc.strerror}") from None
    with os.fdopen(file_fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise FileNotFoundError(f"{relpath}: not a regular file")
        return f.read() if max_bytes is None else f.read(max_bytes)


def write_new_file(root: Path, relpath: str, data: bytes) -> None:
    """Create the file `relpath` in the folder with `data`, following no symlink on the way
    (the guest may have put one anywhere) and replacing nothing (`FileExistsError`)."""
    parts = _parts(relpath)
    fd = _parent(root, parts, create=True)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
            | getattr(os, "O_CLOEXEC", 0)
        file_fd = os.open(parts[-1], flags, 0o644, dir_fd=fd)
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "wb") as f:
        f.write(data)


Snapshot = dict[str, tuple[int, int]]
SNAPSHOT_FILES = 5_000
"""Most files a snapshot records: a cell's changes are found among these."""


def snapshot(root: Path, limit: int = SNAPSHOT_FILES) -> Snapshot:
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
