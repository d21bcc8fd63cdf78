"""Building the sandbox component, once per machine (or once per wheel), and finding it again.

componentize-py (Bytecode Alliance) turns our app module (`_app.py`) into a WASI 0.2
component of CPython 3.14 and pre-initializes it: the guest package, asyncio and the usual
standard library are imported, and the warm-up session played, inside its memory image. The
interposer (`_interpose.py`) then puts our wrappers between its libc and WASI.

A built component lives in a folder named by everything it was made from: our world and app
module, the interposer, componentize-py's version, the guest's sources and the warm-up
script. It is looked for in the private cache folder, then beside this module (a wheel
carries one, built when the wheel was), and built when neither has it: that needs
componentize-py installed, and takes 10-20 s. Its standard library folder (served read-only
at /python) gets its `.pyc` files from a guest of ours afterwards (see `_runtime.py`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ...errors import RuntimeNotFound
from .._wasmtime.compile_cache import cache_dir, entry_lock, progress
from .._wasmtime.wasm_file import WasmFile, sha256_of
from . import _app
from ._immortal import make_immortal
from ._interpose import interpose

__all__ = ["Built", "COMPONENTIZE_PY", "find_or_build", "build_key", "PACKAGED"]

log = logging.getLogger("tooliscode")

COMPONENTIZE_PY = "0.25.1"
"""The componentize-py release the component is built with (CPython 3.14)."""
PACKAGED = Path(__file__).with_name("_prebuilt")
"""Where a wheel carries its built component."""
_DONE = "BUILD.json"
_TIMEOUT_S = 900.0
_SOURCES = ("_app.py", "_binary.py", "_immortal.py", "_in_memory.py", "_interpose.py")
"""This package's files whose text is part of the key."""


@dataclass(frozen=True)
class Built:
    """A built component: its file and its standard library folder."""

    wasm: WasmFile
    stdlib: Path

    @property
    def folder(self) -> Path:
        return self.wasm.path.parent


def build_key(guest_modules: list[tuple[str, str]], warmup: dict[str, Any]) -> str:
    """`warmup`: the warm-up session ("commands", "answer", "expected") and the host's own
    turns ("turns": sources compiled into the image, as the boot and the serve loop)."""
    digest = hashlib.sha256(COMPONENTIZE_PY.encode())
    here = Path(__file__).parent
    for name in _SOURCES:
        digest.update(b"\0" + (here / name).read_bytes())
    digest.update(json.dumps([guest_modules, warmup], sort_keys=True).encode())
    return digest.hexdigest()[:32]


def _found(folder: Path) -> Built | None:
    wasm = folder / "sandbox.wasm"
    if not (folder / _DONE).is_file() or not wasm.is_file():
        return None
    meta = json.loads((folder / _DONE).read_text("utf-8"))
    return Built(WasmFile(wasm, meta["sha256"], None, "built"), folder / "python")


def find_or_build(guest_modules: list[tuple[str, str]], warmup: dict[str, Any],
                  wat2wasm: Callable[[str], bytes | bytearray],
                  announce: Callable[[str], None] = log.warning) -> Built:
    """The built component for these guest sources and warm-up script: cached, packaged,
    or built now (one process at a time builds an entry; the others wait and use it)."""
    key = build_key(guest_modules, warmup)
    name = f"component-{key}"
    folder = cache_dir() / name
    found = _found(folder) or _found(PACKAGED / name)
    if found is not None:
        return found
    with entry_lock(folder, announce, "building the sandbox component"):
        found = _found(folder)
        if found is not None:
            return found
        _check_componentize_py()
        with progress(announce, f"building the sandbox component (CPython 3.14, componentize-py "
                      f"{COMPONENTIZE_PY})", "once for this machine", "10-20 s") as done:
            _build(folder, guest_modules, warmup, wat2wasm)
            done(f"at {folder}")
    built = _found(folder)
    if built is None:  # pragma: no cover - _build writes it last
        raise RuntimeNotFound(f"the sandbox component build left no result in {folder}")
    return built


def _check_componentize_py() -> None:
    try:
        version = metadata.version("componentize-py")
    except metadata.PackageNotFoundError:
        version = None
    if version != COMPONENTIZE_PY:
        raise RuntimeNotFound(
            "tooliscode's sandbox component is not built for this version and componentize-py "
            f"{COMPONENTIZE_PY} is not installed to build it "
            f"({'found ' + version if version else 'not installed'}). Install it with "
            f"`pip install componentize-py=={COMPONENTIZE_PY}` (the `build` extra), install "
            "tooliscode from a wheel (which carries the built sandbox), or set "
            "PYTHON_WASM_HOME to a python.wasm of your own")


def _build(folder: Path, guest_modules: list[tuple[str, str]], warmup: dict[str, Any],
           wat2wasm: Callable[[str], bytes | bytearray]) -> None:
    parent = folder.parent
    work = Path(tempfile.mkdtemp(prefix=f".build-{folder.name}-", dir=parent))
    try:
        app = work / "app"
        guest = app / "tooliscode_guest"
        guest.mkdir(parents=True)
        (guest / "__init__.py").write_text("", "utf-8")
        for qualified, source in guest_modules:
            (guest / f"{qualified.rpartition('.')[2]}.py").write_text(source, "utf-8")
        (app / f"{_app.APP_MODULE}.py").write_text(_app.APP_SOURCE, "utf-8")
        (app / _app.WARMUP_FILE).write_text(json.dumps(warmup), "utf-8")
        (app / _app.STDLIB_OUT).mkdir()
        (work / "sandbox.wit").write_text(_app.WIT, "utf-8")
        raw = work / "raw.wasm"
        _componentize(work, app, raw)
        out = work / "out"
        out.mkdir()
        component = interpose(raw.read_bytes(), wat2wasm)
        names = app / _app.NAMES_FILE
        if not names.is_file():
            raise RuntimeError("the app module did not name its objects (no "
                               f"{_app.NAMES_FILE}): the build is incomplete")
        named = names.read_bytes()
        component, made = make_immortal(component, named)
        log.debug("tooliscode: %d of the %d objects named in the component's image made "
                  "immortal", made, len(named) // 4)
        (out / "sandbox.wasm").write_bytes(component)
        os.replace(app / _app.STDLIB_OUT / "python", out / "python")
        meta = {"sha256": sha256_of(out / "sandbox.wasm"), "componentize_py": COMPONENTIZE_PY,
                "python": "3.14"}
        (out / _DONE).write_text(json.dumps(meta), "utf-8")
        if folder.exists():  # an unfinished entry (no BUILD.json): a killed build's
            shutil.rmtree(folder)
        os.replace(out, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)


_RUN = """\
import sys, componentize_py
wit, world, app, module, output = sys.argv[1:6]
componentize_py.componentize([wit], [world], [], False, None, [app], [], module, output, False,
                             [], [], False, None)
"""


def _componentize(work: Path, app: Path, output: Path) -> None:
    """Run componentize-py in a process of its own (it takes some 400 MB while it works)."""
    args = [sys.executable, "-c", _RUN, str(work / "sandbox.wit"), _app.WORLD, str(app),
            _app.APP_MODULE, str(output)]
    done = subprocess.run(args, cwd=work, capture_output=True, text=True, timeout=_TIMEOUT_S,
                          check=False)
    if done.returncode != 0 or not output.is_file():
        text = (done.stdout + done.stderr).strip()
        # The cause (a Python traceback from the pre-initialization) comes first; a long
        # native backtrace after it says little.
        shown = text if len(text) <= 4000 else f"{text[:3000]}\n...\n{text[-1000:]}"
        raise RuntimeError(f"building the sandbox component failed:\n{shown}")
