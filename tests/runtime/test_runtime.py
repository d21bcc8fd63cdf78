"""Finding and trusting python.wasm, and the compiled-module cache."""

from __future__ import annotations

import shutil

import pytest
import wasmtime
from _first_use import SIX_BY_SEVEN, WARMUP, run_in
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


@pytest.fixture(scope="module")
def fresh_cache(tmp_path_factory):
    """One first use into an empty cache folder: the sandbox component is built, compiled and
    its standard library's .pyc made, by `tooliscode warmup` (what the README says to run
    ahead of a first start). The slowest thing the suite does, so it is done once."""
    cache = tmp_path_factory.mktemp("fresh") / "cache"
    return cache, run_in(cache, WARMUP, args=["warmup", "--runtime", "default"])


def test_a_fresh_cache_builds_and_compiles_once_and_says_so(fresh_cache):
    cache, warmup = fresh_cache
    assert warmup.returncode == 0, warmup.stderr
    for said in ("building the sandbox component", "compiling the sandbox component",
                 "'default' ready"):
        assert said in warmup.stderr, warmup.stderr
    (built,) = cache.glob("component-*/sandbox.wasm")
    assert (built.parent / "python" / ".compiled").is_file()
    assert list(built.parent.glob("python/__pycache__/difflib.cpython-314.pyc"))
    assert len(list(cache.glob("component-*.cwasm"))) == 1
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    first = run_in(cache, SIX_BY_SEVEN)
    assert first.stdout.strip() == "42", first.stderr
    assert "building" not in first.stderr and "compiling" not in first.stderr, first.stderr
    assert "panicked" not in warmup.stderr + first.stderr


def test_without_componentize_py_a_missing_component_is_a_clear_error(tmp_path):
    """A new guest package with no built component for it and no componentize-py to build
    one: the error names the ways out."""
    code = ("import sys\nsys.modules['componentize_py'] = None\n"
            "from importlib import metadata\n_real = metadata.version\n"
            "def version(name):\n    if name == 'componentize-py':\n"
            "        raise metadata.PackageNotFoundError(name)\n    return _real(name)\n"
            "metadata.version = version\n" + SIX_BY_SEVEN)
    out = run_in(tmp_path / "cache", code)
    assert out.returncode != 0
    assert "pip install componentize-py==" in out.stderr and "PYTHON_WASM_HOME" in out.stderr


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


