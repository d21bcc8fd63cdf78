"""A module file on disk, named by its content: what the compile cache and images key on."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WasmFile", "sha256_of"]


@dataclass(frozen=True)
class WasmFile:
    """A python.wasm on disk, with its hash and where its stdlib lives (if outside it)."""

    path: Path
    sha256: str
    lib_dir: Path | None
    source: str
    """How it was found: "explicit", "env", "packaged" (or the data runtime's wheel)."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
