"""A first use on a machine whose cache has no Cranelift compile yet: guests start on Winch's,
Cranelift's is made in the background and new guests take it, and a session started on Winch
goes on after the swap. The background compile is held at its lock, as if another process
were making it, and let through with this machine's compile (the test does not wait for a
second Cranelift compile)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import textwrap

from _first_use import run_in
from tooliscode import Session
from tooliscode.runtime import runtime_named
from tooliscode.runtime._wasmtime.compile_cache import entry_path
from tooliscode.runtime.component._runtime import _FLAGS

_FIRST_USE = textwrap.dedent("""
    import json, sys
    from tooliscode import Session
    from tooliscode.runtime import runtime_named
    s = Session([])
    print(json.dumps({"tier": s._state.worker.instance.tier.compiler,
                      "value": s.run("x = 41\\nx").value}), flush=True)
    sys.stdin.readline()  # the test lets the background compile through
    tiers = runtime_named("default").tiers
    assert tiers.wait(600)
    t = Session([])
    print(json.dumps({"after": s.run("x + 1").value, "tier": t._state.worker.instance.tier.compiler,
                      "new": t.run("6 * 7").value, "slots": tiers.current.slots is not None}),
          flush=True)
    s.close(); t.close()
""")


def _component_entries(tmp_path):
    """A cache folder with this machine's built component (not its compiles), and where
    Cranelift's compile of it lies here and would lie there."""
    with Session([], runtime="default") as s:
        assert s.run("1").ok
    runtime = runtime_named("default")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    shutil.copytree(runtime.built.folder, cache / runtime.built.folder.name)
    ours = entry_path(runtime.built.wasm, _FLAGS, "component")
    assert ours is not None and ours.is_file()
    return cache, ours, cache / ours.name


def test_guests_start_on_winch_and_take_cranelift_when_it_is_ready(tmp_path):
    cache, ours, theirs = _component_entries(tmp_path)
    lock = open(theirs.with_name(theirs.name + ".lock"), "a+b")  # noqa: SIM115
    fcntl.flock(lock, fcntl.LOCK_EX)  # as if another process were compiling it
    env = {"TOOLISCODE_CACHE_DIR": str(cache), "TOOLISCODE_RUNTIME": "default"}
    proc = subprocess.Popen([sys.executable, "-c", _FIRST_USE], env={**os.environ, **env},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stdout.readline() or "{}")
        assert first == {"tier": "winch", "value": "41"}, proc.stderr.read()
        shutil.copyfile(ours, theirs)  # what the other process would leave
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    out, err = proc.communicate("go\n", timeout=300)
    assert proc.returncode == 0, err
    # Cranelift's has its slots, though the guest on Winch's wanted one first
    assert json.loads(out) == {"after": "42", "tier": "cranelift", "new": "42", "slots": True}, err
    assert "Winch" in err and "Cranelift's compile is ready" in err, err


def test_cranelift_now_skips_winch(tmp_path):
    cache, ours, theirs = _component_entries(tmp_path)
    shutil.copyfile(ours, theirs)
    out = run_in(cache, "from tooliscode import Session\nwith Session([]) as s:\n"
                 "    print(s._state.worker.instance.tier.compiler, s.run('1 + 1').value)")
    assert out.stdout.split() == ["cranelift", "2"], out.stderr
    assert "Winch" not in out.stderr and "compiling" not in out.stderr, out.stderr
