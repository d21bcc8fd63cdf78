"""What a cell tells its host about the namespace it leaves: its new names, and whether a
checkpoint need follow it (guest/main.py, guest/cells.py), run here on this interpreter."""

from __future__ import annotations

import marshal

import pytest
from tooliscode.guest import channel, main, reach


@pytest.fixture
def guest(monkeypatch):
    sent: list[bytes] = []

    def exchange(frame: bytes) -> bytes:
        sent.append(bytes(frame))
        return marshal.dumps({"ok": True})

    monkeypatch.setattr(channel, "exchange", exchange)
    reach.settle(None)  # as `main.attach` does in a guest
    g = main.Guest()
    g.handle({"op": "setup", "tools": [], "limits": {}})
    g.sent = sent
    return g


def _cell(g: main.Guest, code: str) -> dict:
    result = g.handle({"op": "cell", "code": code, "point": True})
    assert result["ok"], result
    return result


_UNKNOWN = "if getattr(0, 'real'): pass\n"
"""Reflection: a cell that starts so could reach any variable (see guest/reach.py), so only
the held objects tell whether its state is the last checkpoint's (`persist.unchanged_since`)."""


def _checkpoint(g: main.Guest) -> int:
    """Take a whole checkpoint; returns its mark."""
    reply = g.handle({"op": "checkpoint"})
    assert reply == {"ok": True, "dropped": {}, "line": reply["line"]}
    return reply["line"]


def test_a_cell_says_when_no_checkpoint_need_follow_it(guest):
    assert _cell(guest, "pass")["point"] == "empty"
    assert "point" not in _cell(guest, "x = 1")  # no checkpoint was taken yet
    _checkpoint(guest)
    assert len(guest.sent) == 1
    assert _cell(guest, _UNKNOWN + "x = 1")["point"] == "same"
    assert "point" not in _cell(guest, _UNKNOWN + "y = x")  # a new name, though the same object
    _checkpoint(guest)
    assert "point" not in _cell(guest, _UNKNOWN + "z = 2")
    _checkpoint(guest)
    assert _cell(guest, _UNKNOWN + "print(z)")["point"] == "same"
    assert "point" not in _cell(guest, _UNKNOWN + "z = 3")
    assert "point" not in _cell(guest, _UNKNOWN + "rows = [1]")
    _checkpoint(guest)
    assert "point" not in _cell(guest, _UNKNOWN + "rows.append(2)")  # may change in place
    assert _cell(guest, "del x, y, z, rows")["point"] == "empty"
    assert "point" not in _cell(guest, "z = 3")
    _checkpoint(guest)
    assert _cell(guest, "del z")["point"] == "empty"
    assert "point" not in _cell(guest, _UNKNOWN + "z = 3")  # the last point's object, not held


def test_after_a_checkpoint_a_cell_gives_what_it_changed(guest):
    """A cell that names only variables holding numbers and strings changed nothing else:
    its result carries what it set, as plain values or pickled, and what it deleted."""
    _cell(guest, "x = 1\nrows = [1]")
    mark = _checkpoint(guest)
    assert _cell(guest, "print(len('abc'))")["point"] == {"on": mark, "n": 0}  # names none
    assert _cell(guest, "x = 2")["point"] == {"on": mark, "n": 1, "set": {"x": 2}}
    assert _cell(guest, "y = x + 1")["point"] == {"on": mark, "n": 2, "set": {"x": 2, "y": 3}}
    told = _cell(guest, "more = [x] * 3")["point"]
    assert told["n"] == 3 and sorted(told["touched"]) == ["more", "x"] and told["delta"]
    assert _cell(guest, "del y")["point"] == {"on": mark, "n": 4, "set": {}, "removed": ["y"]}
    assert "point" not in _cell(guest, "rows.append(2)")  # a list: it and what shares it
    assert "point" not in _cell(guest, "z = 1")  # no delta without the checkpoint it follows
    assert _checkpoint(guest) != mark  # each whole checkpoint is marked anew
    assert "point" not in _cell(guest, "big = 'x' * 100_000")  # past a small delta: whole


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
        assert "point" not in _cell(guest, _UNKNOWN + "x = None\nx = int('1000000000009')")
        guest.handle({"op": "checkpoint"})
        assert "point" not in _cell(guest, _UNKNOWN + "x = None\nx = int('1000000000007')")
        guest.handle({"op": "checkpoint"})


def test_a_big_state_is_not_held_to_be_compared(guest):
    """Holding it would keep a string the next cell drops in memory until the checkpoint
    after that cell: a state past 1 MiB is pickled after each cell instead."""
    _cell(guest, "big = 'x' * (2 << 20)")
    _checkpoint(guest)
    assert guest.kept is None
    assert "point" not in _cell(guest, _UNKNOWN + "n = 1")


def test_a_point_that_fails_leaves_the_cells_result_and_asks_for_a_whole_one(guest, monkeypatch):
    from tooliscode.guest import points

    _cell(guest, "x = 1")
    _checkpoint(guest)

    def broken(*_args):
        raise RuntimeError("no")

    monkeypatch.setattr(points, "delta", broken)
    result = _cell(guest, "x = 2\nprint(x)")
    assert result["stdout"]["text"] == "2\n" and "point" not in result
    assert guest.line is None  # no delta offered until a whole checkpoint is taken
