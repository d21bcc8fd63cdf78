"""Finding and trusting python.wasm, and the compiled-module cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import wasmtime
from tooliscode.errors import RuntimeIntegrityError, RuntimeNotFound
from tooliscode.runtime import PACKAGED_SHA256, locate_python_wasm
from tooliscode.runtime._wasmtime.compile_cache import load_module
from tooliscode.runtime.default._locate import WasmFile


def test_packaged_runtime_is_found_and_verified():
    found = locate_python_wasm()
    assert found.sha256 == PACKAGED_SHA256 and found.source == "packaged"


def test_env_folder_wins_over_packaged(tmp_path, monkeypatch):
    shutil.copy(locate_python_wasm().path, tmp_path / "python.wasm")
    monkeypatch.setenv("PYTHON_WASM_HOME", str(tmp_path))
    found = locate_python_wasm()
    assert found.source == "$PYTHON_WASM_HOME" and found.path == tmp_path / "python.wasm"


def test_explicit_path_wins_over_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHON_WASM_HOME", str(tmp_path / "nowhere"))
    found = locate_python_wasm(locate_python_wasm.__globals__["_packaged"]().path)
    assert found.source == "explicit"


def test_missing_runtime_is_a_clear_error(tmp_path):
    with pytest.raises(RuntimeNotFound, match="python.wasm"):
        locate_python_wasm(tmp_path / "none.wasm")


def test_hash_mismatch_is_refused(tmp_path):
    fake = tmp_path / "python.wasm"
    fake.write_bytes(b"\0asm not really")
    with pytest.raises(RuntimeIntegrityError, match="SHA-256"):
        locate_python_wasm(fake, expected_sha256=PACKAGED_SHA256)


def _run(code: str, cache: Path, timeout: float = 300, args: tuple[str, ...] | list[str] = ()
         ) -> subprocess.CompletedProcess:
    # The default runtime's cold start, whichever runtime the suite runs on: the data runtime's
    # (a minute of compiling) has its own tests in tests/data.
    env = {**os.environ, "TOOLISCODE_CACHE_DIR": str(cache), "TOOLISCODE_RUNTIME": "default"}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


_SIX_BY_SEVEN = ("from tooliscode import Session\ns = Session([])\n"
                 "print(s.run('6*7').value)\ns.close()")
_ONE_PLUS_ONE = ("from tooliscode import Session\nwith Session([]) as s:\n"
                 "    print(s.run('1+1').value)")


@pytest.fixture(scope="module")
def fresh_cache(tmp_path_factory):
    """One cold start into an empty cache folder, shared by the tests below: compiling
    python.wasm is the slowest thing the suite does, so it is done once for all of them, by
    `tooliscode warmup` (what the README says to run ahead of a first start)."""
    cache = tmp_path_factory.mktemp("fresh") / "cache"
    return cache, _run("from tooliscode.cli import main; raise SystemExit(main())", cache,
                       args=["warmup", "--runtime", "default"])


def test_a_fresh_cache_compiles_once_and_says_so(fresh_cache):
    cache, warmup = fresh_cache
    assert warmup.returncode == 0, warmup.stderr
    assert "compiling the Python runtime" in warmup.stderr and "'default' ready" in warmup.stderr
    cached = list(cache.glob("*.cwasm"))
    assert len(cached) == 1
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    first = _run(_SIX_BY_SEVEN, cache)
    assert first.stdout.strip() == "42" and "compiling" not in first.stderr, first.stderr
    assert "panicked" not in warmup.stderr + first.stderr


def test_a_corrupt_cache_entry_is_replaced(tmp_path, monkeypatch):
    # The cache logic on a tiny module: the same code path as python.wasm, without the
    # seconds a real compile takes (the end-to-end cold start is the test above).
    wasm = tmp_path / "tiny.wasm"
    wasm.write_bytes(wasmtime.wat2wasm('(module (func (export "f") (result i32) i32.const 7))'))
    tiny = WasmFile(wasm, "0" * 64, None, "explicit")
    monkeypatch.setenv("TOOLISCODE_CACHE_DIR", str(tmp_path / "cache"))
    engine, said = wasmtime.Engine(), []
    compiles = lambda: sum(": done in " in line for line in said)  # noqa: E731
    load_module(engine, tiny, "test", said.append)
    (entry,) = (tmp_path / "cache").glob("*.cwasm")
    assert compiles() == 1 and load_module(engine, tiny, "test", said.append)
    assert compiles() == 1, "a good entry was compiled again"
    entry.write_bytes(b"garbage")
    module = load_module(engine, tiny, "test", said.append)
    assert compiles() == 2, "the corrupt entry was not recompiled"
    store = wasmtime.Store(engine)
    assert wasmtime.Instance(store, module, []).exports(store)["f"](store) == 7
    assert entry.read_bytes() != b"garbage"  # and the entry was written again
    assert load_module(engine, tiny, "test", said.append) and compiles() == 2


def test_guest_modules_are_precompiled_once_and_a_damaged_cache_is_survived(fresh_cache, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(fresh_cache[0], cache)
    (entry,) = cache.glob("guest-*.marshal")
    assert oct(entry.stat().st_mode & 0o777) == "0o600"
    for damage in (b"garbage", entry.read_bytes()[:500]):
        entry.write_bytes(damage)
        again = _run(_ONE_PLUS_ONE, cache)
        assert again.returncode == 0 and again.stdout.strip() == "2", again.stderr


def test_closing_the_runtime_while_a_thread_makes_a_guest(tmp_path, monkeypatch):
    """Exit closes the runtime while a daemon thread (a spare's start) may be making a guest:
    the engine must not be freed under it (that crashed the process), and a guest asked for
    after the close is a clear error."""
    import threading

    from tooliscode.runtime import GuestSpec
    from tooliscode.runtime.default import DefaultInstance as WasmtimeInstance
    from tooliscode.runtime.default import WasmtimeRuntime

    runtime = WasmtimeRuntime()
    inside, go = threading.Event(), threading.Event()
    configure = WasmtimeInstance._wasi_config

    def held(instance, spec):  # hold the making of the guest halfway
        inside.set()
        go.wait(30)
        return configure(instance, spec)

    made: list[object] = []

    def make() -> None:
        try:
            made.append(runtime.instantiate(GuestSpec(tmp_path, 64 << 20, "pass")))
        except Exception as exc:  # noqa: BLE001 - the test reports it
            made.append(exc)

    monkeypatch.setattr(WasmtimeInstance, "_wasi_config", held)
    maker = threading.Thread(target=make, daemon=True)
    maker.start()
    try:
        assert inside.wait(30)
        runtime.close()  # what exit does, with a guest halfway made
    finally:
        go.set()
    maker.join(30)  # a hang guard
    assert len(made) == 1 and isinstance(made[0], WasmtimeInstance), made
    made[0].close()
    runtime.close()
    with pytest.raises(RuntimeError, match="closed"):
        runtime.instantiate(GuestSpec(tmp_path, 64 << 20, "pass"))
