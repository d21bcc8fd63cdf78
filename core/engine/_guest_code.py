"""The guest's own modules, compiled once by a guest that runs nothing else.

A new interpreter would otherwise compile some 1,700 lines of `tooliscode_guest` source at
every start (about 40-60 ms of a 100 ms boot). The code objects come from a throwaway guest
that only compiles: no model-written code ever ran in it, so what it produces can be handed
to other guests. They are kept in memory and in the private cache folder, keyed by the
runtime and the sources, like the compiled interpreter itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import threading

from .._temp_folders import new_folder
from ..guest import guest_sources
from ..runtime import GUEST_DIR, GuestSpec, GuestTrap, Runtime, cache_dir, write_private

__all__ = ["guest_code"]

log = logging.getLogger("tooliscode")

_COMPILE = f'''
import json, marshal
sources = json.load(open("{GUEST_DIR}/sources.json"))
code = {{name: marshal.dumps(compile(text, "<tooliscode>/" + name.rpartition(".")[2] + ".py",
                                     "exec", dont_inherit=True))
        for name, text in sources}}
with open("{GUEST_DIR}/code.bin", "wb") as f:
    marshal.dump(code, f)
'''
_lock = threading.Lock()
_memo: dict[str, bytes] = {}


_keys: dict[str, str] = {}


def _key(runtime: Runtime) -> str | None:
    fingerprint = runtime.fingerprint
    if not fingerprint:
        return None
    key = _keys.get(fingerprint)  # every new guest asks: hashing the sources costs 0.6 ms
    if key is None:
        sources = json.dumps(guest_sources()).encode()
        key = _keys[fingerprint] = hashlib.sha256(fingerprint.encode() + sources).hexdigest()[:32]
    return key


def _compile_in_a_guest(runtime: Runtime) -> bytes:
    folder = new_folder("compile")
    try:
        (folder / "sources.json").write_text(json.dumps(guest_sources()), "utf-8")
        instance = runtime.instantiate(GuestSpec(folder, 256 * 1024 * 1024, _COMPILE))
        try:
            instance.run()
        finally:
            instance.close()
        return (folder / "code.bin").read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def guest_code(runtime: Runtime) -> bytes | None:
    """marshal'd {module: marshal'd code} for `runtime`, or None (guests then compile)."""
    key = _key(runtime)
    if key is None:
        return None
    with _lock:
        if key in _memo:
            return _memo[key] or None
        cached = None
        try:
            cached = cache_dir() / f"guest-{key}.marshal"
            blob = cached.read_bytes() if cached.is_file() else None
        except OSError:
            blob = None
        if blob is None:
            try:
                blob = _compile_in_a_guest(runtime)
            except (GuestTrap, OSError) as exc:
                log.warning("tooliscode: could not precompile the guest modules: %s", exc)
                _memo[key] = b""
                return None
            if cached is not None:
                write_private(cached, blob)
        _memo[key] = blob
        return blob
