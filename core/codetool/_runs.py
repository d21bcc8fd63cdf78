"""The per-run scope: a fresh sandbox for each run, with the next one started in advance.

A run takes a sandbox (the spare, if there is one) and gives it back when it ends; on another
thread the next run's spare is then made and started, and the old sandbox closed, so runs
rarely wait for an interpreter to start and never share one. The spare is offered before its
start: a run that takes it early waits for that start rather than making a second one. A
sandbox no code ran in is not closed but becomes the spare itself, and so does one that can
be renewed (see `engine/_renewal.py`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ._background import submit
from ._sandbox import Sandbox, Toolbox

__all__ = ["Runs"]


@dataclass
class Runs:
    """Hands out run sandboxes made by `new`, keeping one started spare when `keep_spare`."""

    new: Callable[[], Sandbox]
    keep_spare: bool = True
    spare: Sandbox | None = None
    """The started sandbox the next run will take, if there is one."""
    _closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def take(self) -> Sandbox:
        """A sandbox for one run: the spare if there is one."""
        with self._lock:
            spare, self.spare = self.spare, None
        if spare is None:
            return self.new()
        spare.hurry()  # its renewal, if one waits to begin
        return spare

    def finish(self, sandbox: Sandbox, toolbox: Toolbox | None = None) -> None:
        """A run ended: close its sandbox and (given its tools) start the next run's spare,
        both on another thread. A sandbox that can be renewed is the spare at once, renewed on
        its guest's thread (see `engine/_renewal.py`): the next run may well start before
        that is done."""
        if self.keep_spare and toolbox is not None:
            if sandbox.fresh:
                if sandbox.ready(toolbox) and self._offer(sandbox):
                    return  # started, and no code ran in it: the spare again, no thread needed
            elif sandbox.hold_for_renewal(toolbox):
                if self._offer(sandbox):
                    sandbox.renew(toolbox)
                    return
                sandbox.lock.release()
        submit(self._finish, sandbox, toolbox)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            spare, self.spare = self.spare, None
        if spare is not None:
            spare.close()

    def _finish(self, sandbox: Sandbox, toolbox: Toolbox | None) -> None:
        if not self.keep_spare or toolbox is None or self._closed:
            sandbox.close()
            return
        if sandbox.fresh and (sandbox.session is None or sandbox.ready(toolbox)):
            # no code ran in it: as good as new (started, or about to be)
            if self._offer(sandbox):
                sandbox.start(toolbox)
                return
        elif self.spare is None:
            # Offered before it starts: a run that takes it meanwhile waits for this start at
            # its first cell, rather than starting a second interpreter beside it.
            spare = self.new()
            if self._offer(spare):
                spare.start(toolbox)
            else:
                spare.close()
        sandbox.close()  # after the spare's start: the next run needs that one first

    def _offer(self, spare: Sandbox) -> bool:
        """Make `spare` the next run's sandbox, unless there is one already (or we closed)."""
        with self._lock:
            if self.spare is None and not self._closed:
                self.spare = spare
                return True
        return False
