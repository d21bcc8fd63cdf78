"""runtime/_wasmtime/write_back.py without a guest: a copy-on-write mapping of a file stands for
linear memory mapped from a start image."""

from __future__ import annotations

import ctypes
import mmap
import os
import sys

import pytest
from tooliscode._folders import empty_folder, is_empty
from tooliscode.runtime._wasmtime import page_map
from tooliscode.runtime._wasmtime import write_back as renew
from tooliscode.runtime._wasmtime.page_map import PAGE, written

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="page map: Linux")

PAGES = 16


@pytest.fixture
def memory(tmp_path):
    """(address, mapping, image bytes): the file's pages 0-11 hold data, 12-15 lie past it."""
    image = bytes((i % 251) for i in range(12 * PAGE))
    path = tmp_path / "image.mem"
    path.write_bytes(image + bytes(4 * PAGE))
    with open(path, "r+b") as f:
        mapping = mmap.mmap(f.fileno(), PAGES * PAGE, flags=mmap.MAP_PRIVATE,
                            prot=mmap.PROT_READ | mmap.PROT_WRITE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
    yield address, mapping, image
    mapping.close()


def test_only_written_pages_count_as_written(memory):
    address, mapping, _ = memory
    if written(address, PAGES * PAGE) is None:
        pytest.skip("no page map here")
    mapping[3 * PAGE] = 7
    mapping[13 * PAGE + 5] = 1
    flags = written(address, PAGES * PAGE)
    assert [i for i, f in enumerate(flags) if f] == [3, 13]


def test_the_written_pages_of_a_big_memory_too():
    """Past `_KEEP_LOCK_BYTES` of entries (512 MiB of memory) the page map is read the other
    way (giving the lock up): the same answer."""
    size = 2 * (page_map._KEEP_LOCK_BYTES // 8) * PAGE  # 1 GiB of address space, not touched
    mapping = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
                        | getattr(mmap, "MAP_NORESERVE", 0))
    try:
        address = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
        if written(address, size) is None:
            pytest.skip("no page map here")
        for page in (0, 4096, size // PAGE - 1):
            mapping[page * PAGE] = 1
        flags = written(address, size)
        assert len(flags) == size // PAGE
        assert [i for i, f in enumerate(flags) if f] == [0, 4096, size // PAGE - 1]
    finally:
        mapping.close()


@pytest.mark.parametrize("scan", [True, False])  # PAGEMAP_SCAN, or reading the page map
def test_private_regions_are_the_written_pages(memory, monkeypatch, scan):
    address, mapping, _ = memory
    if written(address, PAGES * PAGE) is None:
        pytest.skip("no page map here")
    if not scan:
        monkeypatch.setattr(page_map, "_scan_works", False)
    for page in (1, 2, 3, 7, 13, 15):
        mapping[page * PAGE + 1] = 5
    found = page_map.private_regions(address, PAGES * PAGE, page_map.Regions())
    if found is None:
        pytest.skip("no PAGEMAP_SCAN here")
    assert found == [(1 * PAGE, 4 * PAGE), (7 * PAGE, 8 * PAGE), (13 * PAGE, 14 * PAGE),
                     (15 * PAGE, 16 * PAGE)]


def test_private_regions_leave_out_the_markers_of_write_tracking(memory):
    """A commit's write tracking protects every page of the memory, and one never touched
    gets a marker, which a page-table scan takes for a swapped-out page: such pages are not
    written, and a write-back that counted them would copy the whole memory each time."""
    from tooliscode.runtime.data._written import Tracker

    address, mapping, _ = memory
    if page_map.private_regions(address, PAGES * PAGE, page_map.Regions()) is None:
        pytest.skip("no page map here")
    mapping[1 * PAGE] = 3
    tracker = Tracker.start(address, PAGES * PAGE)
    if tracker is None:
        pytest.skip("no write tracking here (userfaultfd's asynchronous write protection)")
    try:
        mapping[13 * PAGE] = 4
        kinds: list[int] = []
        assert page_map.scan(address, PAGES * PAGE, page_map.Regions(),
                             anyof=page_map._PAGE_IS_SWAPPED, returned=page_map._PAGE_IS_SWAPPED,
                             kinds=kinds), "no markers: the case is not made"
        found = page_map.private_regions(address, PAGES * PAGE, page_map.Regions())
        assert found == [(1 * PAGE, 2 * PAGE), (13 * PAGE, 14 * PAGE)]
    finally:
        tracker.close()


def test_a_forked_child_reads_its_own_page_map(memory):
    """The page map is opened once per process: a child's inherited descriptor would read
    its parent's page tables (where the child's writes are not)."""
    address, mapping, _ = memory
    if page_map.private_regions(address, PAGES * PAGE, page_map.Regions()) is None:
        pytest.skip("no page map here")
    pid = os.fork()
    if pid == 0:  # the child: only what it wrote is written
        try:
            mapping[5 * PAGE] = 9
            found = page_map.private_regions(address, PAGES * PAGE, page_map.Regions())
            os._exit(0 if found == [(5 * PAGE, 6 * PAGE)] else 1)
        except BaseException:  # noqa: BLE001 - the child must never return into pytest
            os._exit(2)
    assert os.waitpid(pid, 0)[1] == 0
    assert page_map.private_regions(address, PAGES * PAGE, page_map.Regions()) == []


@pytest.mark.parametrize("scan", [True, False])  # one walk of the page tables, or the page map
def test_restore_brings_back_the_baseline_and_the_image(memory, scan):
    address, mapping, image = memory
    for page, word in ((2, b"base"), (6, b"six!"), (7, b"7777"), (13, b"past")):
        mapping[page * PAGE + 9:page * PAGE + 13] = word  # before the baseline: kept
    baseline = renew.capture(address, PAGES * PAGE, frozenset({7}))
    if baseline is None:
        pytest.skip("no page map here")
    assert [i for i, f in enumerate(baseline.saved) if f] == [2, 6, 7, 13]
    assert baseline.kept_fds == {7}
    expected = bytes(mapping)
    for page in (2, 5, 7, 8, 9, 13, 14):  # over saved pages, image pages and past the image
        mapping[page * PAGE + 50:page * PAGE + 54] = b"run!"
    mapping[6 * PAGE:8 * PAGE] = b"\xff" * (2 * PAGE)
    assert renew.restore(address, PAGES * PAGE, baseline, memoryview(image), scan=scan)
    assert bytes(mapping) == expected


def test_a_mirror_brings_back_the_baseline_with_the_image_placed_past_the_start(tmp_path):
    """A component's memory: zeros, then its image from some page on, then zeros again."""
    image = bytes((i % 241) + 1 for i in range(6 * PAGE))  # no zero byte: a zeroed page shows
    path = tmp_path / "memory.mem"
    path.write_bytes(bytes(2 * PAGE) + image)  # the image lies at offset 2 pages of its file
    memory_file = tmp_path / "as-mapped.mem"
    memory_file.write_bytes(bytes(4 * PAGE) + image + bytes(6 * PAGE))  # pages 4-9
    with open(memory_file, "r+b") as f:
        mapping = mmap.mmap(f.fileno(), PAGES * PAGE, flags=mmap.MAP_PRIVATE,
                            prot=mmap.PROT_READ | mmap.PROT_WRITE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
    mapping[5 * PAGE:6 * PAGE] = b"\x07" * PAGE  # the setup's own pages
    mapping[14 * PAGE] = 9
    with open(path, "rb") as f:
        mirror = renew.Mirror.capture(address, PAGES * PAGE,
                                      renew.ImageFile(f.fileno(), 2 * PAGE, 6 * PAGE, 4 * PAGE))
    if mirror is None:
        pytest.skip("no page map here")
    expected = bytes(mapping)
    mapping[2 * PAGE:12 * PAGE] = b"\xee" * (10 * PAGE)  # over both edges of the image
    mapping[14 * PAGE:16 * PAGE] = b"\xdd" * (2 * PAGE)
    assert mirror.restore(address, PAGES * PAGE)
    assert bytes(mapping) == expected
    assert not mirror.restore(address, (PAGES - 1) * PAGE)  # grown (or shrunk): refused
    mirror.close()
    assert not mirror.restore(address, PAGES * PAGE)
    mapping.close()


def test_restore_refuses_a_memory_of_another_size(memory):
    address, _, image = memory
    baseline = renew.capture(address, PAGES * PAGE, frozenset())
    if baseline is None:
        pytest.skip("no page map here")
    assert not renew.restore(address, (PAGES - 1) * PAGE, baseline, memoryview(image))


def test_emptying_a_folder_never_follows_links(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    folder = tmp_path / "session"
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "f.txt").write_text("x")
    (folder / "top.txt").write_text("y")
    os.symlink(outside, folder / "link")
    os.symlink(outside, folder / "a" / "inner-link")
    assert empty_folder(folder)
    assert list(folder.iterdir()) == []
    assert (outside / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("entry", ["file", "folder", "link", "dangling link", ".hidden"])
def test_a_folder_is_empty_only_with_nothing_in_it(tmp_path, entry):
    folder = tmp_path / "session"
    folder.mkdir()
    assert is_empty(folder) is True and empty_folder(folder)
    if entry == "folder":
        (folder / "sub").mkdir()
    elif entry.endswith("link"):
        os.symlink(tmp_path if entry == "link" else tmp_path / "gone", folder / "l")
    else:
        (folder / entry).write_text("x")
    assert is_empty(folder) is False
    assert empty_folder(folder) and is_empty(folder) is True
    assert is_empty(tmp_path / "missing") is None and not empty_folder(tmp_path / "missing")


_COPYING_AT_EXIT = """
import ctypes, sys, threading
from tooliscode.runtime._wasmtime.write_back import Mirror

libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
size = 64 << 20
address = libc.mmap(None, size, 3, 0x22, -1, 0)  # read-write, private and anonymous
mirror = Mirror(address, size, 0, b"")
source = ctypes.create_string_buffer(size)
copying = threading.Event()

def copy():  # a guest's thread taking a baseline into its mirror as the process ends
    copying.set()
    while True:
        ctypes.memmove(address, source, size)

threading.Thread(target=copy, daemon=True).start()
copying.wait()
print("exiting", flush=True)
"""


def test_a_mirror_is_not_unmapped_under_a_copy_into_it_at_exit():
    """At exit the finalizers run before our exit hook has stopped the guests: a mirror
    unmapped then, while a guest's thread copied a baseline into it, crashed the process."""
    import subprocess

    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", _COPYING_AT_EXIT], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0 and done.stdout == "exiting\n", (done.returncode,
                                                                    done.stderr[-2000:])
