"""Shared pieces of the hostile-code suite: a victim session with data that must survive."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tooliscode import CellResult, Limits, Session

SENTINEL = "precious data " * 100

VICTIM_LIMITS = Limits(timeout_s=60, memory_bytes=64 * 1024 * 1024, output_chars=5_000,
                       disk_bytes=20_000_000, disk_entries=2_000)
"""Small memory, so a memory bomb meets `MemoryError` within milliseconds; a generous cell
time, so a bomb that must end with its own error (MemoryError, RecursionError, a full disk)
ends with it however loaded the machine is, never with a timeout."""

RUNAWAY_LIMITS = Limits(timeout_s=1, output_chars=5_000)
"""For code that only a timeout stops: a short one, so each such test waits 1 s, not 5. The
cells a test runs after it take milliseconds, far inside the limit even on a loaded machine.
The default memory (512 MiB) means code that eats memory as it spins reaches the timeout
long before the memory limit."""


def secret_tool(account: str) -> dict:
    """A tool the guest is offered."""
    return {"account": account, "balance": 10}


def _victim(limits: Limits) -> Iterator[Session]:
    s = Session([secret_tool], limits=limits)
    s.write_file("sentinel.txt", SENTINEL)
    assert s.run("state_marker = 'alive'").ok
    yield s
    s.close()


@pytest.fixture
def victim() -> Iterator[Session]:
    # A fresh one per test, not one reset between tests: after its first MemoryError a guest
    # gets 16 MiB of room past its limit, once, so that the next cell can still run.
    yield from _victim(VICTIM_LIMITS)


@pytest.fixture
def runaway_victim() -> Iterator[Session]:
    yield from _victim(RUNAWAY_LIMITS)


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
