"""Snapshot envelopes and session stores: what is refused, and what two workers may share."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from tooliscode.durable import FolderStore, SnapshotError, StoreUnavailable, pack, unpack

from .conftest import free_port

PARTS = {"memory": bytes(range(256)) * 1000, "files": b"", "meta": b'{"cells": 3}'}


def test_a_snapshot_round_trips_and_is_compressed():
    blob = pack(PARTS, runtime="data:abc", meta={"cells": 3})
    assert len(blob) < len(PARTS["memory"]) // 10
    parts, meta = unpack(blob, runtime="data:abc")
    assert parts == PARTS and meta == {"cells": 3}


@pytest.mark.parametrize("damage", ["flip", "truncate", "junk", "empty", "header"])
def test_damaged_snapshots_are_refused(damage):
    blob = bytearray(pack(PARTS, runtime="r"))
    if damage == "flip":
        blob[len(blob) // 2] ^= 0x01
    elif damage == "truncate":
        blob = blob[: len(blob) - 100]
    elif damage == "junk":
        blob = bytearray(os.urandom(500))
    elif damage == "empty":
        blob = bytearray()
    else:
        blob[12] ^= 0xFF  # inside the header's length or JSON
    with pytest.raises(SnapshotError):
        unpack(bytes(blob), runtime="r")


@pytest.mark.parametrize("key", [None, "k1"])
def test_a_flipped_byte_anywhere_is_refused_stored_parts_included(key):
    """Unkeyed, the check is a CRC-32 (it only has to catch corruption); keyed, an HMAC.
    Either covers the header, the compressed parts and the parts stored as they are."""
    new = os.urandom(50_000)
    blob = pack({"files": b"f" * 100}, runtime="r", key=key, stored={"new": new})
    assert unpack(blob, runtime="r", key=key)[0]["new"] == new
    tag = 4 if key is None else 32
    assert blob[-tag - len(new):-tag] == new  # stored as it is, then the tag
    header_end = 12 + int.from_bytes(blob[8:12], "little")
    for at in (9, 20, header_end + 2, len(blob) - tag - 25_000, len(blob) - 1):
        damaged = bytearray(blob)
        damaged[at] ^= 0x04
        with pytest.raises(SnapshotError):
            unpack(bytes(damaged), runtime="r", key=key)


def test_two_snapshots_of_the_same_state_have_different_versions():
    """A store's version tells a worker whether its live session is still the conversation's:
    two saves must never look alike, even with the same bytes inside."""
    from tooliscode.durable._store import version_of

    first, second = pack(PARTS, runtime="r"), pack(PARTS, runtime="r")
    assert unpack(first, runtime="r") == unpack(second, runtime="r")
    assert version_of(first) != version_of(second)
    assert version_of(first) == version_of(bytes(first))
    assert version_of(b"") != version_of(b"x")  # any bytes a store is given


def test_a_snapshot_of_another_runtime_is_refused_by_name():
    blob = pack(PARTS, runtime="default:123")
    with pytest.raises(SnapshotError, match="made on runtime 'default:123'"):
        unpack(blob, runtime="data:456")


def test_with_a_key_tampering_and_other_keys_are_refused():
    blob = pack(PARTS, runtime="r", key="k1")
    assert unpack(blob, runtime="r", key="k1")[0] == PARTS
    with pytest.raises(SnapshotError, match="another key"):
        unpack(blob, runtime="r", key="k2")
    with pytest.raises(SnapshotError, match="signed"):
        unpack(blob, runtime="r")
    # A forger who rebuilds the parts and recomputes a plain hash is still refused.
    with pytest.raises(SnapshotError, match="not signed"):
        unpack(pack({"memory": b"evil"}, runtime="r"), runtime="r", key="k1")


def test_the_key_can_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("TOOLISCODE_SNAPSHOT_KEY", "secret")
    blob = pack(PARTS, runtime="r")
    monkeypatch.delenv("TOOLISCODE_SNAPSHOT_KEY")
    with pytest.raises(SnapshotError):
        unpack(blob, runtime="r")
    assert unpack(blob, runtime="r", key="secret")[0] == PARTS


# -- stores -------------------------------------------------------------------------------


@pytest.fixture(params=["folder", "redis"])
def store(request, tmp_path):
    if request.param == "folder":
        s = FolderStore(tmp_path / "store")
    else:
        from tooliscode.durable import RedisStore

        s = RedisStore(request.getfixturevalue("redis_url"), prefix=f"t{time.time_ns()}:")
    yield s
    s.close()


def test_a_store_keeps_bytes_by_key(store):
    assert store.get("conv-1") is None
    store.put("conv-1", b"one")
    store.put("conv-2", b"two")
    first = store.version("conv-1")
    store.put("conv-1", b"uno")
    assert store.version("conv-1") != first and store.version("nothing") is None
    assert store.get("conv-1") == b"uno" and store.get("conv-2") == b"two"
    store.delete("conv-1")
    assert store.get("conv-1") is None and store.get("conv-2") == b"two"


def test_a_lease_has_one_owner_at_a_time(store):
    assert store.acquire("k", "worker-a", 30)
    assert store.acquire("k", "worker-a", 30)  # renewing
    assert not store.acquire("k", "worker-b", 30)
    store.release("k", "worker-b")  # not b's to give back
    assert not store.acquire("k", "worker-b", 30)
    store.release("k", "worker-a")
    assert store.acquire("k", "worker-b", 30)


def test_the_folder_store_leaves_no_temporary_files(tmp_path):
    store = FolderStore(tmp_path)
    for i in range(20):
        store.put("k", bytes([i]) * 10_000)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".snap", ".ver"]


_HOLDER = textwrap.dedent("""
    import sys, time
    from tooliscode.durable import {cls}
    store = {make}
    assert store.acquire("conv", "holder", {ttl})
    print("held", flush=True)
    time.sleep(600)
""")


def _holder(cls: str, make: str, ttl: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER.format(cls=cls, make=make, ttl=ttl)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_killed_worker_loses_its_folder_lease_at_once(tmp_path):
    proc = _holder("FolderStore", f"FolderStore({str(tmp_path)!r})", 30)
    store = FolderStore(tmp_path)
    try:
        assert not store.acquire("conv", "other", 30)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert store.acquire("conv", "other", 30)


def test_a_killed_worker_loses_its_redis_lease_when_it_expires(redis_url):
    from tooliscode.durable import RedisStore

    proc = _holder("RedisStore", f"RedisStore({redis_url!r}, prefix='kill:')", 0.5)
    store = RedisStore(redis_url, prefix="kill:")
    try:
        assert not store.acquire("conv", "other", 30)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    deadline = time.monotonic() + 10
    while not store.acquire("conv", "other", 30):
        assert time.monotonic() < deadline, "the dead worker's lease never expired"
        time.sleep(0.05)


def test_a_redis_that_is_down_is_a_clear_error_not_a_hang():
    from tooliscode.durable import RedisStore

    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout_s=1.0)
    with pytest.raises(StoreUnavailable, match="Redis session store failed to read"):
        store.get("conv")


@pytest.mark.parametrize("pagemap", [True, False])
def test_a_memory_delta_keeps_only_written_pages_and_rebuilds_the_memory(pagemap, monkeypatch):
    import ctypes
    import mmap

    from tooliscode.runtime._wasmtime import page_map as kernel_map
    from tooliscode.runtime.data._memory_delta import PAGE, Delta, apply, take, zero

    if not pagemap:  # where the kernel's page map cannot be read, pages are compared
        monkeypatch.setattr(kernel_map, "_PAGEMAP", "/nonexistent/pagemap")
        monkeypatch.setattr(kernel_map, "scan_fd", lambda: None)  # nor opened before
    else:
        kernel_map.scan_fd()  # opened once per process, maybe by an earlier test: either way

    base = bytes(range(256)) * (PAGE * 10 // 256)
    # runs faulted in first
    monkeypatch.setattr("tooliscode.runtime.data._memory_delta._POPULATED", PAGE)
    # page-aligned, private: as linear memory
    memory = mmap.mmap(-1, 14 * PAGE, flags=mmap.MAP_PRIVATE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    memory[:len(base)] = base
    memory[3 * PAGE + 5] ^= 0xFF
    memory[7 * PAGE] ^= 0x01
    memory[5 * PAGE:6 * PAGE] = b"\x07" * PAGE  # over the image, but new data: kept whole
    memory[10 * PAGE:11 * PAGE + 123] = b"\x07" * (PAGE + 123)  # past the image: new pages
    taken = take(address, len(memory), memoryview(base), bytes(10), 1 << 20)
    current = bytes(memory)  # after: reading a page never written maps it (zero) too
    delta = Delta(taken.size, taken.runs, b"".join(taken.spans), b"".join(taken.new))
    assert delta.size == len(current)
    assert len(delta.spans) == 2  # only the bytes that changed; the pages written back
    # as they were are left out
    # the untouched zero pages past them too (compared, they count: nothing tells them apart)
    assert len(delta.new) == (3 if pagemap else 5) * PAGE
    target = mmap.mmap(-1, 14 * PAGE, flags=mmap.MAP_PRIVATE)
    at = ctypes.addressof(ctypes.c_char.from_buffer(target))
    target[:] = b"\x09" * len(target)
    target[:len(base)] = base
    zero(at + len(base), len(target) - len(base))
    apply(delta, at, len(target))
    assert bytes(target) == current
    with pytest.raises(ValueError):
        apply(Delta(delta.size, delta.runs, delta.spans[:-1], delta.new), at, len(target))
    with pytest.raises(ValueError):
        apply(delta, at, len(base))
