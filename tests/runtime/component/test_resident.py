"""An idle default guest keeps resident only the start image's pages it reads: once idle, its
image is registered with a userfaultfd, which turns the kernel's fault-around off, and the
pages its boot mapped sixteen at a time are let go (`runtime/_wasmtime/userfault.py`)."""

from __future__ import annotations

import time

import pytest
from tooliscode import Limits, Session
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


def _shed(session: Session):
    instance = session._state.worker.instance
    end = time.monotonic() + 10
    while instance.shed_memory is None and time.monotonic() < end:
        time.sleep(0.01)  # the guest's thread sheds once it waits for a command
    assert instance.shed_memory is not None, "the idle guest's memory was not registered"
    return instance.shed_memory


@pytest.fixture(scope="module")
def session():
    with Session([], runtime=runtime_named("default"), limits=Limits(timeout_s=20)) as s:
        yield s


def test_an_idle_guest_reads_its_image_one_page_at_a_time(session):
    r = session.run("import json\nrows = [{'id': i} for i in range(1000)]\nprint(len(rows))")
    assert r.ok and r.stdout.strip() == "1000", r.error
    memory = _shed(session)
    sizes, flags = _mapping(memory.address + memory.image.start)
    assert "uw" in flags  # registered for write protection: no fault-around
    # The image's pages it only read (the others it wrote: private to it). Mapped sixteen
    # at a time, those came to about 8.5 MiB by a guest's first cell; one at a time, 1-2.
    read = sizes["Shared_Clean"] + sizes["Private_Clean"]
    assert read < 3 * 1024, str(sizes)


def test_the_pages_let_go_come_back_as_they_were(session):
    _shed(session)
    r = session.run("import decimal, statistics\n"
                    "print(len(rows), rows[-1], json.dumps({'a': [1, 2]}),\n"
                    "      statistics.mean(r['id'] for r in rows), decimal.Decimal('1.10') * 3)")
    assert r.ok, r.error
    assert r.stdout.split(None, 1)[0] == "1000"
    assert "{'id': 999}" in r.stdout and '{"a": [1, 2]}' in r.stdout
    assert r.stdout.split()[-2:] == ["499.5", "3.30"]
