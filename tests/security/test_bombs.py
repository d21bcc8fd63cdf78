"""Resource bombs: recursion, memory, threads, loops, output, disk."""

from __future__ import annotations

import pytest
from tooliscode import Limits, Session

from .conftest import assert_actionable, assert_survived

KEEPS_STATE = [
    ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
    ("x = []\nfor _ in range(300_000):\n    x = [x]\nrepr(x)", "RecursionError"),
    ("import json\njson.loads('[' * 200_000 + ']' * 200_000)", "RecursionError"),
    ("eval('(' * 200_000 + ')' * 200_000)", "SyntaxError|RecursionError|MemoryError"),
    ("b = bytearray(10**10)", "MemoryError|OverflowError"),
    ("b = bytearray(2**31 - 1)", "MemoryError"),
    ("s = 'x' * 10**10", "MemoryError|OverflowError"),
    ("l = [0] * 10**9", "MemoryError"),
    ("chunks = []\nwhile True:\n    chunks.append(bytearray(4 * 1024 * 1024))", "MemoryError"),
    ("d = {}\ni = 0\nwhile True:\n    d[i] = str(i) * 100\n    i += 1", "MemoryError"),
    ("import threading\nfor _ in range(10_000):\n    threading.Thread(target=lambda: None).start()",
     "RuntimeError"),
    ("import os\nwhile True:\n    os.fork()", "AttributeError"),
]


@pytest.mark.parametrize("code,errors", KEEPS_STATE,
                         ids=[c.split("\n")[-1][:40] for c, _ in KEEPS_STATE])
def test_bombs_that_the_interpreter_survives(victim, code, errors):
    r = victim.run(code)
    assert not r.ok and r.error_type in errors.split("|"), (r.error_type, r.error[-500:])
    assert not r.restarted
    assert_survived(victim)


STOPPED = [
    "while True:\n    pass",
    "def spin():\n    while True:\n        x = 1\nspin()",
    "import itertools\nsum(itertools.count())",
    "import time\ntime.sleep(10**6)",
    "import asyncio\nawait asyncio.sleep(10**6)",
    "import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)\nf(0)",
    "x = 2\nwhile True:\n    x = x * x",
]
EATS_MEMORY = STOPPED[-2:]
"""These also grow the guest's memory: on a fast enough machine they could meet the memory
limit before the timeout, and `MemoryError` with the session kept is right too."""


@pytest.mark.parametrize("code", STOPPED, ids=[c.split("\n")[-1][:40] for c in STOPPED])
def test_runaway_code_is_stopped_and_replaced(runaway_victim, code):
    victim = runaway_victim
    r = victim.run(code)
    if not r.rolled_back and code in EATS_MEMORY:
        assert r.error_type == "MemoryError", r.error
        assert_survived(victim)
        return
    assert not r.ok and r.rolled_back and not r.restarted, r.error
    assert r.error_type in ("TimeoutError", "MemoryError", "RecursionError"), r.error
    assert_actionable(r, "back to its state before this cell")
    assert not r.lost_names
    assert_survived(victim)  # the session came back to its state before the cell


def test_a_gigabyte_of_output_is_bounded(victim):
    r = victim.run("chunk = 'z' * (1 << 20)\nfor _ in range(1024):\n    print(chunk)")
    assert r.ok or r.rolled_back  # it may run out of time, never out of host memory
    assert len(r.stdout) < 10_000
    if r.ok:
        assert "characters" in r.truncated
        saved = victim.workdir / ".tooliscode" / "output"
        assert sum(f.stat().st_size for f in saved.iterdir()) <= Limits().spill_bytes
    assert_survived(victim)


def test_raw_descriptor_output_is_bounded(victim):
    r = victim.run("import os\nfor _ in range(2000):\n    os.write(1, b'q' * 65536)")
    assert r.ok, r.error
    assert len(r.stdout) <= 70_000
    assert_survived(victim)


def test_filling_the_folder_stops_at_the_quota(victim):
    r = victim.run("f = open('fill.bin', 'wb')\nwhile True:\n    f.write(b'x' * (1 << 20))")
    assert_actionable(r, "quota")
    assert any("quota" in n for n in r.notices)
    size = (victim.workdir / "fill.bin").stat().st_size
    assert size <= 20_000_000 + (1 << 20)
    assert_survived(victim)
    r = victim.run("import os\nos.remove('fill.bin')\nopen('after.txt', 'w').write('ok')")
    assert r.ok, r.error  # deleting makes room again


def test_creating_too_many_files_stops_at_the_quota(victim):
    r = victim.run("import os\nos.makedirs('many', exist_ok=True)\n"
                   "for i in range(100_000):\n    open(f'many/{i}', 'w').close()")
    assert_actionable(r, "quota")
    assert len(list((victim.workdir / "many").iterdir())) <= 2_000
    assert_survived(victim)


def test_holding_too_many_files_open_stops_at_the_limit(victim):
    """Each file a guest holds open is a descriptor of the host process, which every session
    shares: a guest is refused past its own limit, and the host keeps its descriptors."""
    import os

    from tooliscode.runtime._wasmtime.watched import OPEN_FILES

    before = len(os.listdir("/proc/self/fd"))
    victim.write_file("one.txt", "x")
    r = victim.run("held = []\nwhile True:\n    held.append(open('one.txt', 'rb', buffering=0))")
    assert_actionable(r, "files open")
    assert len(os.listdir("/proc/self/fd")) <= before + OPEN_FILES + 16
    r = victim.run("n = len(held)\nfor f in held:\n    f.close()\nheld = [open('one.txt')]\nn")
    assert r.ok and OPEN_FILES - 16 <= int(r.value) <= OPEN_FILES, r.error  # room again
    assert_survived(victim)


def test_exit_of_the_interpreter_itself_is_recovered(victim):
    r = victim.run("import os\nos._exit(3)")
    assert not r.ok and r.rolled_back, r.error
    assert_survived(victim)


def test_guest_breaking_its_own_runtime_only_hurts_itself(victim):
    r = victim.run("import tooliscode_guest.channel as ch\nch.exchange = None\n"
                   "secret_tool(account='a')")
    assert not r.ok
    r = victim.run("import sys\nsys.modules.clear()\n1")
    # however broken the guest is, the host keeps working and can replace it
    other = Session([])
    assert other.run("2 + 2").value == "4"
    other.close()
