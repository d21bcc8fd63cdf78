"""Shared pieces of the hostile-code suite: a victim session with data that must survive."""

from __future__ import annotations

import pytest
from tooliscode import CellResult, Limits, Session

SENTINEL = "precious data " * 100


def secret_tool(account: str) -> dict:
    """A tool the guest is offered."""
    return {"account": account, "balance": 10}


@pytest.fixture
def victim():
    s = Session([secret_tool], limits=Limits(timeout_s=5, output_chars=5_000,
                                             disk_bytes=20_000_000, disk_entries=2_000))
    s.write_file("sentinel.txt", SENTINEL)
    assert s.run("state_marker = 'alive'").ok
    yield s
    s.close()


def assert_survived(s: Session, *, state_kept: bool = True) -> None:
    """The host is up, the session answers, files already there are intact."""
    r = s.run("1 + 1")
    assert r.ok and r.value == "2", r.error
    assert s.read_file("sentinel.txt").decode() == SENTINEL
    if state_kept:
        assert s.run("state_marker").value == "'alive'"


def assert_actionable(r: CellResult, *words: str) -> None:
    assert not r.ok
    text = (r.error or "") + " ".join(r.notices)
    assert any(w.lower() in text.lower() for w in words), text
