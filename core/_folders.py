"""Walking and emptying the session folder without ever following a link: the guest can
plant links anywhere in it, and the host must not be led outside."""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["empty_folder", "is_empty", "walk"]


def walk(root: Path | str, *, skip: str | None = None, ordered: bool = False
         ) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every entry under `root`, folders included, as (its path relative to `root`, the entry).

    A link is an entry, never a folder to enter. `skip` names a folder (relative path) not to
    enter; `ordered` gives each folder's entries by name. Folders that cannot be read are
    passed over: what the walk reports is what could be seen."""
    stack = [(str(root), "")]
    while stack:
        folder, rel = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name) if ordered else list(listing)
        except OSError:
            continue
        for entry in entries:
            path = rel + entry.name
            try:
                inside = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if inside and path != skip:
                stack.append((entry.path, path + "/"))
            yield path, entry


class _Dirent(ctypes.Structure):
    """`struct dirent` of Linux's C libraries on 64-bit machines (glibc and musl alike)."""

    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


# PyDLL: these calls keep the interpreter lock. Emptying a guest's folder runs on its thread
# while the caller's thread may be busy with the next run: an `os` call gives the lock up,
# and each taking it back can wait out a switch interval (5 ms by default).
_libc = ctypes.PyDLL(None, use_errno=True) \
    if sys.platform.startswith("linux") and ctypes.sizeof(ctypes.c_void_p) == 8 else None
if _libc is not None:
    _libc.opendir.restype = ctypes.c_void_p
    _libc.opendir.argtypes = [ctypes.c_char_p]
    _libc.readdir.restype = ctypes.POINTER(_Dirent)
    _libc.readdir.argtypes = [ctypes.c_void_p]
    _libc.closedir.argtypes = [ctypes.c_void_p]


def is_empty(folder: Path | str) -> bool | None:
    """Whether `folder` holds nothing (None where that cannot be told: it cannot be read)."""
    if _libc is None:
        try:
            with os.scandir(folder) as entries:
                return next(entries, None) is None
        except OSError:
            return None
    listing = _libc.opendir(os.fsencode(folder))
    if not listing:
        return None
    try:
        ctypes.set_errno(0)
        while entry := _libc.readdir(listing):
            if entry.contents.d_name not in (b".", b".."):
                return False
        return ctypes.get_errno() == 0 or None  # readdir's NULL: the end, or an error
    finally:
        _libc.closedir(listing)


def empty_folder(folder: Path) -> bool:
    """Remove everything inside `folder` (never following links); False if something stays.
    An empty folder is told as such at once (`is_empty`), without giving up the lock."""
    if is_empty(folder):
        return True
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
    except OSError:
        return False
    return is_empty(folder) is True
