"""How a command crosses to a guest's thread and its result back, between two busy threads.

Being woken from sleep costs 20-50 us each way, and a small cell and a caller's turn between
two cells each take about a tenth of a millisecond. So each side spins a moment for the
other, on a bell, without the GIL (`runtime.Bell`): the caller for the result
(`spin_for_result`), the guest's thread for the next command (`next_command`). Each side
spins only while the other has been answering that fast: a side that keeps it waiting would
only have it burn a core.
"""

from __future__ import annotations

import queue
import time

from ..runtime import bell, spare_spinner
from ._command import Command

__all__ = ["SPIN_S", "TURN_WAIT_S", "Handover"]

SPIN_S = 0.0003
"""How long a thread handing work to the other spins for the answer before it sleeps."""
TURN_WAIT_S = 0.002
"""How long a turn that has given its result waits for the next command before it ends
(see `next_command`)."""


class Handover:
    """One worker's two bells, and whether each side last answered within `SPIN_S`. The
    caller's side: `queued`, `spin_for_result`, `answered`; the guest's thread: `given`,
    `next_command`."""

    def __init__(self) -> None:
        self.submitted = bell()
        """Rung when a command is queued: the guest's thread may be spinning for one."""
        self.delivered = bell()
        """Rung when a command's result is given: its caller may be spinning for it."""
        self.quick = False
        """The last result waited for with `spin_for_result` came within `SPIN_S`: spin for
        the next one too. A new guest's first cell, which takes longer, is not spun for."""
        self.prompt = False
        """The last command after a result (`next_command`) came within `SPIN_S`: spin for
        the next one too. Not after a new guest's first cell: a session made for one cell is
        closed next, seldom at once."""
        self._queued_at = 0.0
        self._given_at = 0.0

    # -- the caller's side ----------------------------------------------------------------

    def queued(self) -> None:
        """A command was queued just now (under the worker's lock)."""
        self._queued_at = time.perf_counter()

    @property
    def results_given(self) -> int:
        """A count of the results given so far: read it before submitting, for
        `spin_for_result`."""
        return self.delivered.count

    def spin_for_result(self, seen: int) -> float:
        """For a caller that submitted a command unrung and waits for its result next: spin
        for it a moment without the GIL, so that a small cell's result needs no waking. The
        guest's thread, spinning for the command, is rung once the GIL is let go, so it wakes
        to a free GIL. The caller then waits for the result as it would have (no time when
        it has come), and tells `answered` when it did, given what this returns."""
        began = time.perf_counter()
        if self.quick:
            self.delivered.wait(seen, SPIN_S, ring=self.submitted)
        else:
            self.submitted.ring()
        return began

    def answered(self, began: float) -> None:
        """The result waited for since `began` has come. Whether it came within `SPIN_S` is
        told by when it was given, not by when this thread woke to it: a wake-up would make
        every result look late once the spinning stopped."""
        self.quick = 0 <= self._given_at - began <= SPIN_S
        if self.quick:
            spare_spinner()  # for the next wait, made now that nothing waits for it

    # -- the guest's thread ---------------------------------------------------------------

    def given(self) -> None:
        """A result was given just now."""
        self._given_at = time.perf_counter()

    def next_command(self, commands: queue.SimpleQueue[Command], since: float, seen: int
                     ) -> Command | None:
        """After a result (given unrung, at `since`, `seen` commands having been queued by
        then): the next command, if it comes within `TURN_WAIT_S` of `since`. The wait begins
        with a spin (`SPIN_S`) that rings the caller's bell first: a caller spinning for the
        result wakes to a free GIL, and its next command wakes no one. The turn is judged
        prompt by when that command was queued, not when this thread woke to it."""
        if self.prompt and commands.empty():
            self.submitted.wait(seen, SPIN_S, ring=self.delivered)
        else:
            self.delivered.ring()
        try:
            command = commands.get(timeout=max(0.0, TURN_WAIT_S - (time.perf_counter() - since)))
        except queue.Empty:
            self.prompt = False
            return None
        self.prompt = self._queued_at - since <= SPIN_S
        return command
