"""The compiled-module cache under real processes: one compiles, another waits and loads; a
killed compile leaves no entry, and its leftovers are cleaned up."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from tooliscode.runtime import ENV_COMPILER, WasmtimeRuntime, locate_python_wasm
from tooliscode.runtime._wasmtime.compile_cache import entry_path

_LOAD = "from tooliscode.runtime import WasmtimeRuntime; WasmtimeRuntime(); print('LOADED')"


def _start(cache, code: str = _LOAD) -> subprocess.Popen:
    # Cranelift's compile at once (the one the lock guards), not Winch's first
    env = {**os.environ, "TOOLISCODE_CACHE_DIR": str(cache), ENV_COMPILER: "cranelift"}
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _shared_entry():
    """The command runtime's Cranelift entry in the cache the suite shares (with an empty
    cache, guests start on Winch's compile while Cranelift's is made in the background)."""
    assert WasmtimeRuntime().tiers.wait(900)  # compiles it if this process is the first
    path = entry_path(locate_python_wasm(), WasmtimeRuntime.engine_flags)
    assert path is not None and path.is_file()
    return path


def _entry(cache, monkeypatch):
    monkeypatch.setenv("TOOLISCODE_CACHE_DIR", str(cache))
    return entry_path(locate_python_wasm(), WasmtimeRuntime.engine_flags)


def test_a_process_waits_for_the_lock_holder(tmp_path, monkeypatch):
    shared = _shared_entry()
    entry = _entry(tmp_path, monkeypatch)
    with open(entry.with_name(entry.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as if another process were compiling
        proc = _start(tmp_path)
        guard = threading.Timer(300, proc.kill)
        guard.start()
        try:
            first = proc.stderr.readline()  # the child blocks on the lock after saying so
            assert "another process is compiling" in first and "waiting" in first, first
            assert proc.poll() is None and not entry.exists()
            # What the holder would leave: the entry, written before it lets go (a copy of
            # this machine's, so the test does not wait for a second compile).
            shutil.copyfile(shared, entry)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            guard.cancel()
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0 and "LOADED" in out, err
    assert "compiling the Python runtime" not in err, err  # it loaded what the holder made


def test_a_killed_compile_leaves_no_entry_then_two_processes_compile_it_once(tmp_path,
                                                                               monkeypatch):
    """One real compile after a killed one: the kill leaves no entry; of the two processes
    started next, one compiles (removing the killed writer's leftovers) while the other
    waits, and both load it."""
    entry = _entry(tmp_path, monkeypatch)
    proc = _start(tmp_path)
    time.sleep(1.0)  # inside the compile (it takes seconds)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert not entry.exists()
    leftover = tmp_path / f".tmp-{entry.name}-killed"
    leftover.write_bytes(b"half a module")  # what a kill during the write would leave
    procs = [_start(tmp_path), _start(tmp_path)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 and "LOADED" in out for p, (out, _) in zip(procs, outs)), outs
    logs = "".join(err for _, err in outs)
    assert logs.count("(once for this machine;") == 1, logs  # one compile started
    assert entry.is_file() and not leftover.exists()
    assert not list(tmp_path.glob(".tmp-*"))
