"""The default runtime's first guests: the component is found (or built) and compiled once,
by whichever asks first; a guest asked for meanwhile waits for it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from tooliscode.engine._boot import BAKED_BOOT, boot_reply
from tooliscode.runtime.base import GuestSpec
from tooliscode.runtime.component import _runtime


def test_a_guest_asked_for_while_the_component_loads_waits_for_it(tmp_path, monkeypatch):
    """A server's first request and the pool's first guest, at once on a new runtime: the
    second must not find the boot answer taken but the component not loaded yet."""
    entered, go = threading.Event(), threading.Event()
    real = _runtime.Tiers

    def slow_tiers(*args, **kwargs):
        entered.set()
        assert go.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(_runtime, "Tiers", slow_tiers)
    runtime = _runtime.ComponentRuntime()
    reply = boot_reply(None, True)

    def guest(name: str):
        folder = tmp_path / name
        folder.mkdir()
        return runtime.instantiate(GuestSpec(folder, 256 << 20, BAKED_BOOT, boot_reply=reply))

    try:
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(guest, "first")
            assert entered.wait(60)
            second = pool.submit(guest, "second")
            waited = not second.done()
            go.set()
            guests = [first.result(60), second.result(60)]
        assert waited
        for made in guests:
            made.close()
    finally:
        go.set()
        runtime.close()
