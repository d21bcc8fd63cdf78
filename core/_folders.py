"""Walking and emptying the session folder without ever following a link: the guest can
plant links anywhere in it, and the host must not be led outside."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

__all__ = ["empty_folder", "walk"]


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


def empty_folder(folder: Path) -> bool:
    """Remove everything inside `folder` (never following links); False if something stays."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except OSError:
        return False
