"""How a cell is handed to the guest's thread and its result back (`Handover.spin_for_result`,
`Handover.next_command`): each side spins a moment for the other, and stops spinning for a
side that keeps it waiting."""

from __future__ import annotations

import time

import tooliscode.engine._handover as handover_module
from tooliscode.engine import Limits, Session


def test_a_worker_stops_spinning_for_what_takes_long_and_starts_again(monkeypatch) -> None:
    monkeypatch.setattr(handover_module, "SPIN_S", 0.25)  # any cell comes back within it
    monkeypatch.setattr(handover_module, "TURN_WAIT_S", 1.5)
    with Session(limits=Limits(rollback_bytes=0)) as s:  # no point ends a turn early
        assert s.run("x = 1").ok
        worker = s._state.worker
        assert worker is not None
        handover = worker.handover
        assert handover.quick
        assert s.run("import time; time.sleep(0.6)").ok  # a result that takes long
        assert not handover.quick
        assert s.run("x = 2").ok  # not spun for, and quick: spin for the next
        assert handover.quick
        time.sleep(0.6)  # the next cell comes late: the turn waited without spinning
        assert s.run("x = 3").ok
        assert not handover.prompt
        assert s.run("x").value == "3"
        assert s.run("x = 4").ok  # came at once after the last result
        assert handover.prompt
