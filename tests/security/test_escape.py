"""Reaching outside the sandbox: files, environment, network, processes, threads, ctypes."""

from __future__ import annotations

import os

import pytest

from .conftest import assert_actionable, assert_survived

FILE_ATTACKS = [
    "open('/etc/passwd').read()",
    "open('/etc/shadow').read()",
    "open('/proc/self/environ').read()",
    "open('/proc/self/maps').read()",
    "open('/dev/mem', 'rb').read(1)",
    "open('../etc/passwd').read()",
    "open('/session/../etc/passwd').read()",
    "open('/session/../../../../etc/passwd').read()",
    "import os\nos.chdir('..')\nos.listdir('.')",
    "import os\nos.listdir('/')",
    "import os\nos.listdir('/proc')",
    "open('/tmp/escape.txt', 'w').write('x')",
    "open('/escape.txt', 'w').write('x')",
    "import os\nos.rename('sentinel.txt', '/tmp/stolen.txt')",
    "import shutil\nshutil.copy('sentinel.txt', '/tmp/stolen.txt')",
    f"open({os.path.expanduser('~/.bashrc')!r}).read()",
    "import os\nos.mkdir('/session/../outside')",
]


@pytest.mark.parametrize("code", FILE_ATTACKS)
def test_file_escapes_fail(victim, code):
    r = victim.run(code)
    assert_actionable(r, "only /session", "No such file", "not permitted", "Errno")
    assert not os.path.exists("/tmp/escape.txt") and not os.path.exists("/tmp/stolen.txt")
    assert_survived(victim)


SYMLINK_ATTACKS = [
    ("import os\nos.symlink('/etc/passwd', 'pw')\nopen('pw').read()", "pw"),
    ("import os\nos.symlink('../../../../../../etc', 'etc')\nopen('etc/passwd').read()", "etc"),
    ("import os\nos.symlink('/', 'root')\nos.listdir('root')", "root"),
    ("import os\nos.link('/etc/passwd', 'hard')", None),
]


@pytest.mark.parametrize("code,link", SYMLINK_ATTACKS)
def test_symlinks_do_not_escape_in_guest_or_host(victim, code, link):
    r = victim.run(code)
    assert not r.ok
    if link and (victim.workdir / link).is_symlink():
        with pytest.raises(FileNotFoundError):
            victim.read_file(f"{link}/passwd" if link != "pw" else link)
        listed = {f.path: f for f in victim.files()}
        assert listed[link].is_symlink  # listed, never followed
    assert_survived(victim)


def test_host_file_api_refuses_traversal(victim):
    for bad in ("../../etc/passwd", "/etc/passwd", "sub/../../x", "."):
        with pytest.raises((ValueError, FileNotFoundError)):
            victim.read_file(bad)
    with pytest.raises(ValueError):
        victim.write_file("../outside.txt", "x")


ENV_ATTACKS = [
    "import os\nassert dict(os.environ) == {}, os.environ\nraise RuntimeError('empty')",
    "import os\nassert os.getenv('HOME') is None\nraise RuntimeError('empty')",
    "import sys\nassert len(sys.argv) <= 1, sys.argv\nraise RuntimeError('empty')",
]


@pytest.mark.parametrize("code", ENV_ATTACKS)
def test_no_host_environment(victim, code, monkeypatch):
    monkeypatch.setenv("TOOLISCODE_PROBE_SECRET", "s3cret")
    r = victim.run(code)
    assert r.error_type == "RuntimeError" and "empty" in r.error, r.error
    assert "s3cret" not in (r.error + r.stdout)
    assert_survived(victim)


NETWORK_ATTACKS = [
    "import socket\ns = socket.socket()\ns.connect(('127.0.0.1', 80))",
    "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)",
    "import socket\nsocket.getaddrinfo('example.com', 80)",
    "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "s.sendto(b'x', ('8.8.8.8', 53))",
    "import socket\ns = socket.socket()\ns.bind(('0.0.0.0', 8080))\ns.listen()",
    "import urllib.request\nurllib.request.urlopen('http://example.com')",
    "import http.client\nhttp.client.HTTPConnection('example.com').request('GET', '/')",
    "import ssl",
]


@pytest.mark.parametrize("code", NETWORK_ATTACKS)
def test_no_network(victim, code):
    r = victim.run(code)
    assert_actionable(r, "no network", "not available", "not supported")
    assert_survived(victim)


PROCESS_ATTACKS = [
    "import subprocess\nsubprocess.run(['ls'])",
    "import subprocess\nsubprocess.Popen('sh', shell=True)",
    "import os\nos.system('ls')",
    "import os\nos.fork()",
    "import os\nos.execv('/bin/sh', ['sh'])",
    "import os\nos.kill(1, 9)",
    "import multiprocessing\nmultiprocessing.Process(target=print).start()",
    "import signal\nsignal.alarm(1)",
    "import threading\nthreading.Thread(target=print).start()",
    "import concurrent.futures as cf\ncf.ThreadPoolExecutor().submit(print, 1)",
    "import _thread\n_thread.start_new_thread(print, ())",
    "import ctypes",
    "import _ctypes",
]


@pytest.mark.parametrize("code", PROCESS_ATTACKS)
def test_no_processes_threads_or_ctypes(victim, code):
    if code == "import ctypes" and victim.runtime.name == "data":
        # pandas imports ctypes there, so the module exists; it can load no library
        r = victim.run("import ctypes\nctypes.CDLL(None)")
        assert not r.ok and "unavailable" in r.error, r.error
        return assert_survived(victim)
    r = victim.run(code)
    assert_actionable(r, "no processes", "not available", "threads")
    assert_survived(victim)
