"""An idle default guest keeps resident only the start image's pages it reads: once idle, its
image is registered with a userfaultfd, which turns the kernel's fault-around off, and the
pages its boot mapped sixteen at a time are let go (`runtime/_wasmtime/userfault.py`). Only a
guest found before any code of a user's ran in it (`ComponentInstance.idle`), and not in a
slot (`pooling.py`: a slot's pages are all the guest's own), so these are made ahead of need,
as a pool's."""

from __future__ import annotations

import time

import pytest
from tooliscode import Limits
from tooliscode.engine._worker import Worker
from tooliscode.runtime import runtime_named
from tooliscode.runtime._wasmtime import userfault

pytestmark = pytest.mark.skipif(userfault.open_fd() is None,
                                reason="this kernel has no asynchronous userfaultfd")


def _mapping(address: int) -> tuple[dict[str, int], set[str]]:
    """(KiB by kind: Rss, Private_Dirty..., flags) of this process's mapping that holds
    `address`."""
    found, sizes = False, {}
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if not head[0].endswith(":") and "-" in head[0]:
                start, _, end = head[0].partition("-")
                found = int(start, 16) <= address < int(end, 16)
            elif found and head[0] == "VmFlags:":
                return sizes, set(head[1:])
            elif found and head[-1] == "kB":
                sizes[head[0].rstrip(":")] = int(head[1])
    raise AssertionError(f"no mapping holds {address:#x}")


def _shed(worker: Worker):
    instance = worker.instance
    end = time.monotonic() + 10
    while instance.shed_memory is None and time.monotonic() < end:
        time.sleep(0.01)  # the guest's thread sheds once it waits for a command
    assert instance.shed_memory is not None, "the idle guest's memory was not registered"
    return instance.shed_memory


def _cell(worker: Worker, code: str) -> dict:
    return worker.call({"op": "cell", "code": code})


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    made = Worker(runtime_named("default"), tmp_path_factory.mktemp("resident"),
                  Limits(timeout_s=20), ahead=True)
    made.between_turns(lambda instance: None)  # boots it; no command of a user's yet
    yield made
    made.shutdown()


def test_an_idle_guest_reads_its_image_one_page_at_a_time(worker):
    memory = _shed(worker)  # idle before any cell: found and registered
    r = _cell(worker, "import json\nrows = [{'id': i} for i in range(1000)]\nprint(len(rows))")
    assert r["ok"] and r["stdout"]["text"].strip() == "1000", r
    sizes, flags = _mapping(memory.address + memory.image.start)
    assert "uw" in flags  # registered for write protection: no fault-around
    # The image's pages it only read (the others it wrote: private to it). Mapped sixteen
    # at a time, those came to about 8.5 MiB by a guest's first cell; one at a time, 1-2.
    read = sizes["Shared_Clean"] + sizes["Private_Clean"]
    assert read < 3 * 1024, str(sizes)


def test_the_pages_let_go_come_back_as_they_were(worker):
    r = _cell(worker, "import decimal, statistics\n"
              "print(len(rows), rows[-1], json.dumps({'a': [1, 2]}),\n"
              "      statistics.mean(r['id'] for r in rows), decimal.Decimal('1.10') * 3)")
    assert r["ok"], r
    out = r["stdout"]["text"]
    assert out.split(None, 1)[0] == "1000"
    assert "{'id': 999}" in out and '{"a": [1, 2]}' in out
    assert out.split()[-2:] == ["499.5", "3.30"]


def test_a_guest_that_ran_a_cell_first_is_found_at_its_first_idle_moment(tmp_path):
    fresh = Worker(runtime_named("default"), tmp_path, Limits(timeout_s=20), ahead=True)
    try:
        assert _cell(fresh, "x = 41")["ok"]  # its first command: its thread finds it waiting
        _shed(fresh)
        r = _cell(fresh, "print(x + 1)")
        assert r["ok"] and r["stdout"]["text"] == "42\n", r
    finally:
        fresh.shutdown()


BREAK_EXCHANGE = """
import sys
_app = sys.modules["tooliscode_sandbox"]._namespace
_real = _app["exchange"]
def _lying(request, _real=_real):
    if request == b"":
        return _real(request)  # the host's word: kept to itself
    return _real(str(id(None)).encode())  # an address every guest has the same thing at
_app["exchange"] = _lying
"""


def test_a_cell_cannot_point_the_host_at_other_memory(tmp_path):
    """The word is the host's, new each time, and given to this guest alone in a turn that
    reaches no tool: a cell that answers for the guest can only fail to be found."""
    liar = Worker(runtime_named("default"), tmp_path, Limits(timeout_s=20), ahead=True)
    try:
        assert _cell(liar, BREAK_EXCHANGE)["ok"]
        end = time.monotonic() + 10
        while liar.instance.idle_work and time.monotonic() < end:
            time.sleep(0.01)  # its idle moment comes once it has waited a while
        assert not liar.instance.idle_work and liar.instance.shed_memory is None
        assert not liar.instance.trapped
        r = _cell(liar, "print(_real is not None)")
        assert r["ok"] and r["stdout"]["text"] == "True\n", r
    finally:
        liar.shutdown()
