"""The session folder: shared with the host, kept across restarts, removed on close."""

from __future__ import annotations

import time

from tooliscode import Limits, Session


def test_host_sees_what_the_guest_wrote(session):
    r = session.run("import os\nos.makedirs('out/deep', exist_ok=True)\n"
                    "open('out/deep/r.csv', 'w').write('a,b\\n1,2\\n')\n"
                    "open('notes.txt', 'w').write('hello')")
    assert r.ok and set(r.files_written) == {"out/deep/r.csv", "notes.txt"}
    assert session.read_file("out/deep/r.csv") == b"a,b\n1,2\n"
    assert session.read_file("/session/notes.txt") == b"hello"
    assert {f.path for f in session.files()} >= {"out/deep/r.csv", "notes.txt"}
    assert session.run("x = 1").files_written == ()


def test_host_can_give_the_guest_files(session):
    session.write_file("input/data.json", '{"n": 3}')
    r = session.run("import json\njson.load(open('input/data.json'))['n']")
    assert r.value == "3"


def test_sqlite_in_the_folder(session):
    r = session.run("import sqlite3\ndb = sqlite3.connect('db.sqlite')\n"
                    "db.execute('create table t(x)')\n"
                    "db.executemany('insert into t values (?)', [(i,) for i in range(100)])\n"
                    "db.commit()\ndb.execute('select sum(x) from t').fetchone()[0]")
    assert r.ok and r.value == "4950", r.error
    assert (session.workdir / "db.sqlite").stat().st_size > 0


def test_own_folder_is_kept_and_survives_restart(tmp_path):
    folder = tmp_path / "mine"
    with Session([], workdir=folder, limits=Limits(timeout_s=1)) as s:
        assert s.workdir == folder.resolve()
        s.run("open('keep.txt', 'w').write('1')")
        r = s.run("while True: pass")
        assert r.rolled_back
        assert s.run("open('keep.txt').read()").value == "'1'"
    assert (folder / "keep.txt").read_text() == "1"


def _gone_soon(folder, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return not folder.exists()


def test_temporary_folder_is_deleted_on_close():
    """Its files go with the session: the folder is removed by the guest's thread once the
    guest has ended, or emptied for the next session where the guest goes back to its pool
    (tests/engine/test_pool.py)."""
    s = Session([])
    folder = s.workdir
    s.run("open('x', 'w').write('y')")
    assert folder.exists()
    s.close()
    assert _gone_soon(folder / "x")
    s.close()  # twice is fine
    s2 = Session([])
    s2.run("open('z', 'w').write('1')")
    s2.close(wait=True)
    assert not (s2.workdir / "z").exists()


def test_closed_session_refuses_work():
    import pytest
    from tooliscode import SessionClosed

    s = Session([])
    s.close()
    with pytest.raises(SessionClosed):
        s.run("1")


def test_files_written_by_renames_by_tools_and_not_by_reads(tmp_path):
    folder = tmp_path / "w"

    def save_report(name: str) -> str:
        """A host tool that writes into the session folder."""
        (folder / name).write_text("report")
        return name

    with Session([save_report], workdir=folder) as s:
        assert s.run("open('a.txt', 'w').write('x')").files_written == ("a.txt",)
        assert s.run("open('a.txt').read()").files_written == ()
        assert s.run("import os\nos.rename('a.txt', 'b.txt')").files_written == ("b.txt",)
        assert s.run("save_report(name='r.txt')").files_written == ("r.txt",)
        assert s.run("f = open('b.txt', 'r+')\nf.write('y')\nf.close()").files_written == ("b.txt",)
