"""What a cell tells its host about the namespace it leaves: its new names, and whether a
checkpoint need follow it (guest/main.py, guest/cells.py), run here on this interpreter."""

from __future__ import annotations

import marshal

import pytest
from tooliscode.guest import channel, main


@pytest.fixture
def guest(monkeypatch):
    sent: list[bytes] = []

    def exchange(frame: bytes) -> bytes:
        sent.append(bytes(frame))
        return marshal.dumps({"ok": True})

    monkeypatch.setattr(channel, "exchange", exchange)
    g = main.Guest()
    g.handle({"op": "setup", "tools": [], "limits": {}})
    g.sent = sent
    return g


def _cell(g: main.Guest, code: str) -> dict:
    result = g.handle({"op": "cell", "code": code, "point": True})
    assert result["ok"], result
    return result


def test_a_cell_says_when_no_checkpoint_need_follow_it(guest):
    assert _cell(guest, "pass")["point"] == "empty"
    assert "point" not in _cell(guest, "x = 1")  # no checkpoint was taken yet
    assert guest.handle({"op": "checkpoint"}) == {"ok": True, "dropped": {}}
    assert len(guest.sent) == 1
    assert _cell(guest, "x = 1")["point"] == "same"
    assert "point" not in _cell(guest, "y = x")  # a new name, though the same object
    guest.handle({"op": "checkpoint"})
    assert "point" not in _cell(guest, "z = 2")
    guest.handle({"op": "checkpoint"})
    assert _cell(guest, "print(z)")["point"] == "same"
    assert "point" not in _cell(guest, "z = 3")
    assert "point" not in _cell(guest, "rows = [1]")
    guest.handle({"op": "checkpoint"})
    assert "point" not in _cell(guest, "rows.append(2)")  # a list can change in place
    assert _cell(guest, "del x, y, z, rows")["point"] == "empty"
    assert "point" not in _cell(guest, "z = 3")
    guest.handle({"op": "checkpoint"})
    assert _cell(guest, "del z")["point"] == "empty"
    assert "point" not in _cell(guest, "z = 3")  # the last point's object, but none is held


def test_names_are_new_against_the_namespace_a_restore_left(guest, tmp_path):
    assert _cell(guest, "a = 1")["new_names"] == ["a"]
    path = str(tmp_path / "state")
    assert guest.handle({"op": "snapshot", "path": path})["ok"]
    assert "new_names" not in _cell(guest, "del a")
    assert guest.handle({"op": "restore", "path": path})["ok"]
    result = _cell(guest, "c = 3")
    assert result["new_names"] == ["c"] and result["names"] == ["a", "c"]


def test_an_object_made_where_a_freed_one_was_is_not_the_same(guest):
    """A freed object's id is soon another's: `x = None` then a new int of the same size
    gets the old one's address. Compared by id, the guest said "same", and a stopped cell
    came back to the old value."""
    _cell(guest, "x = int('1000000000007')")
    guest.handle({"op": "checkpoint"})
    for _ in range(20):  # the allocator's free list hands the block back at once, mostly
        assert "point" not in _cell(guest, "x = None\nx = int('1000000000009')")
        guest.handle({"op": "checkpoint"})
        assert "point" not in _cell(guest, "x = None\nx = int('1000000000007')")
        guest.handle({"op": "checkpoint"})


def test_a_big_state_is_not_held_to_be_compared(guest):
    """Holding it would keep a string the next cell drops in memory until the checkpoint
    after that cell: a state past 1 MiB is pickled after each cell instead."""
    _cell(guest, "big = 'x' * (2 << 20)")
    assert guest.handle({"op": "checkpoint"}) == {"ok": True, "dropped": {}}
    assert guest.kept is None
    assert "point" not in _cell(guest, "n = 1")
