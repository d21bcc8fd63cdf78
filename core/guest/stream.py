"""A cell's printed output sent to the host while the cell runs (`Session.run(on_output=)`).

The cell's `Capture`s keep what they always keep (the bounded whole, for the result); the
`Streamer` takes what they were written since it last sent, and sends it in an "out" request.
A round trip per write would cost more than the write, so writes wait and go together:

- After a quiet spell, each line goes at once, up to `_BURST` lines; then at most one chunk
  per `INTERVAL` (a token bucket): a line waits at most that long.
- A partial line waits for its end up to `INTERVAL`, then goes as it is.
- A write costs nothing more than one comparison it made anyway (`Capture._mark`): the
  captures call `crossed` only when the streamer asked to be told (at the first write after
  a send, every `_CHECK` characters, and when the other stream is written).
- While output waits, a `sys.monitoring` hook on loop jumps, branches and Python function
  starts looks at the clock (every few events) and sends it when it is due: the cell may
  compute for minutes without writing again. It is armed only in cells that print faster
  than a line per `INTERVAL`, while output waits and for `INTERVAL` after; then it costs
  about one Python call per loop pass, branch or function call of the cell's code, except in
  the loops that print, where it switches itself off (see `_fire`).
- Before any other request to the host (a tool call), before `time.sleep` and at `flush()`
  (`print(..., flush=True)`), whatever waits goes first; and all of it at the end of the
  cell, before its result.

What no hook sees, and so waits for the next write, loop pass, branch or call: a partial
line written with `sys.stdout.write` and neither ended nor flushed (as on a terminal), and
output that waits while one long call into C code runs (a big sort, a regex, a numpy or
pandas operation, `sum(range(10**10))`). The guest has one thread, and the host cannot read
its memory (a component's memory is not exposed to it).
"""

from __future__ import annotations

import sys
import time

from . import channel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .capture import Capture

__all__ = ["INTERVAL", "Streamer", "install"]

INTERVAL = 0.01
"""Seconds between chunks while a cell prints faster than that."""
_BURST = 8
"""Lines (chunks) that go one by one after a quiet spell before the interval applies."""
_CHECK = 16384
"""Characters written between two looks at the clock while output waits."""
_MOST = 65536
"""Characters that may wait: more go at once."""
_CHUNK = 32768
"""Characters in one "out" request at most."""
_SPIN_MOST = 64
"""Most monitor events between two looks at the clock (fewer when events come slowly)."""
_NEVER = float("inf")

_clock = time.monotonic
_sleep = time.sleep
_active: Streamer | None = None
"""The running cell's streamer, while one is sending."""


class Streamer:
    """One cell's stdout and stderr, sent as they are written."""

    def __init__(self, left: int | None, out: Capture, err: Capture):
        self.left = _NEVER if left is None else left + 1
        """Characters the host still takes (`Limits.stream_chars`), and one more: the host
        says it cut the output when it gets more than its limit."""
        self.captures = (out, err)
        self.active: Capture | None = None
        """The capture whose writes wait to be sent (None: nothing waits)."""
        self.runs: list[list[str]] = []
        """[stream, text] pairs that wait before the active capture's: order is kept."""
        self.held: list[str] = []
        """The start of a partial line of the active capture, taken but not sent yet."""
        self.since = 0.0
        """When the active capture's waiting output (or its held partial line) began."""
        self.tokens = float(_BURST)
        self.refilled = _clock()
        self.spins = self.every = 1
        self.checked = self.sent_at = 0.0
        self.eager_at = -1
        """The active capture's total when only a partial line waited, due: a write that
        leaves it there (print's `end=""`) means the line stays partial for now."""
        self.armed = False
        self.stopped = False
        self.sending = False
        """A send is under way: the monitor may fire in its own loops, and must not start
        another (it would send later text before the rest of this one)."""
        for capture in self.captures:
            capture.streamer = self
            capture.watch(capture.total)

    # -- telling the streamer ------------------------------------------------------------

    def crossed(self, capture: Capture) -> None:
        """A capture passed its mark: a first write since the last send, a switch of
        stream, or `_CHECK` characters more."""
        if self.stopped:
            capture.unwatch()
            return
        now = _clock()
        active = self.active
        if active is not capture:
            if active is None:
                self.since = now
            else:  # the other stream was written: what waits of this one comes first
                self.runs.append([active.name, "".join(self.held) + active.take()])
                self.held = []
            self.active = capture
        elif capture.total == self.eager_at and not self.armed:
            _arm(self)  # an empty write left a partial line: the monitor sends it in time
        self.check(now)

    def written(self) -> int:
        """Characters the cell has written so far (both streams)."""
        out, err = self.captures
        return out.total + err.total

    def tick(self) -> None:
        """The monitor's look at the clock; it looks more often while events come slowly. It
        is switched off once nothing has waited for `INTERVAL` (switching it costs the
        re-instrumenting of the code that runs next, so not after every send)."""
        now = _clock()
        slow = now - self.checked > INTERVAL / 4
        self.checked = now
        self.every = 1 if slow else min(self.every * 2, _SPIN_MOST)
        self.spins = self.every
        if self.active is None and not self.runs:
            if now - self.sent_at >= INTERVAL:
                _disarm(self)
            return
        self.check(now)

    def check(self, now: float) -> None:
        """Send what is due, and say when to be told next."""
        if self.sending:
            return
        tokens = self.tokens + (now - self.refilled) / INTERVAL
        self.tokens, self.refilled = (tokens if tokens < _BURST else float(_BURST)), now
        active = self.active
        big = active is not None and active.total - active.taken > _MOST
        if self.tokens >= 1 or big:
            self.send(now, whole=big)
        self._watch()

    def flush(self) -> None:
        """Send everything that waits (before a host request, a sleep, the cell's end)."""
        if (self.active is not None or self.runs) and not self.sending:
            self.send(_clock(), whole=True)
            self._watch()

    # -- sending -------------------------------------------------------------------------

    def send(self, now: float, whole: bool) -> None:
        """What waits, in order. Unless `whole`, a partial line at the end waits for its end
        (it goes once it has waited `INTERVAL`)."""
        runs, self.runs = self.runs, []
        active, held = self.active, self.held
        if active is not None:
            new = active.take()
            cut = new.rfind("\n") + 1
            if whole or (not cut and now - self.since >= INTERVAL):
                cut, whole = len(new), True
            if cut or whole:
                text = "".join(held) + new[:cut]
                held.clear()
                if text:
                    runs.append([active.name, text])
            rest = new[cut:]
            if rest:
                if cut:  # the rest of the line began after the lines that go now
                    self.since = now
                held.append(rest)
            elif not held:
                self.active = None
        if runs:
            self.tokens -= 1
            self.sent_at = now
            self._transmit(runs)

    def _transmit(self, runs: list[list[str]]) -> None:
        before, channel.before_request = channel.before_request, None  # no flush in a flush
        self.sending = True
        try:
            for stream, text in runs:
                at = 0
                while at < len(text) and self.left > 0:
                    piece = text[at:at + int(min(_CHUNK, self.left))]
                    at += len(piece)
                    self.left -= len(piece)
                    reply = channel.send_output(stream, piece)
                    if not isinstance(reply, dict) or not reply.get("ok") or reply.get("stop"):
                        raise _Stop
            if self.left <= 0:
                raise _Stop
        except Exception:  # noqa: BLE001 - _Stop, or a failed request: the cell goes on
            self.stop()
        finally:
            self.sending = False
            if _active is self:
                channel.before_request = before

    # -- when to be told -----------------------------------------------------------------

    def _watch(self) -> None:
        if self.stopped:
            return
        active = self.active
        for capture in self.captures:
            if capture is not active:
                capture.watch(capture.total)  # its next write: a switch, or a new batch
        if active is None:
            return  # the monitor, if armed, switches itself off (see `tick`)
        if self.tokens >= 1:
            # Due, but only a partial line waits: most often a print between its pieces, so
            # look again at the next write, even an empty one (`end=""`), before arming.
            self.eager_at = active.total
            active.watch(active.total - 0.5)
        else:
            self.eager_at = -1
            active.watch(active.total + _CHECK)
            if not self.armed:
                _arm(self)

    # -- the cell's start and end --------------------------------------------------------

    def start(self) -> None:
        global _active
        _active = self
        channel.before_request = self.flush

    def finish(self) -> None:
        """The cell ended: send the rest, and stop."""
        if _active is self:
            self.flush()
        self.stop()

    def stop(self) -> None:
        """Send nothing more (the host said so, the limit was reached, or the cell ended)."""
        global _active
        self.stopped = True
        if self.armed:
            _disarm(self)
        if _active is self:
            _active = None
            channel.before_request = None
        for capture in self.captures:
            capture.unwatch()
        self.active, self.runs, self.held = None, [], []


class _Stop(Exception):
    """The host takes no more of this cell's output."""


# -- the monitor: loop jumps, branches and function starts while output waits -------------

_tool: int | None = None
_OWN = Streamer.crossed.__code__.co_filename.rpartition("/")[0] + "/"
"""Where the guest package's code lives: its own functions are never watched."""
_TIGHT = 0.002
"""A place that fired this soon after its last firing, with output written in between, is a
loop that prints: it is switched off (see `_fire`)."""
_seen: dict[int, tuple[int, float]] = {}
"""Per watched place: the cell's output total and the time at its last firing."""
_disabled = False
"""A place of the cell's code was switched off since the last `restart_events`."""


def _fire(code: Any, at: int) -> Any:
    """One event of the cell's code while output waits.

    A loop that prints pays for its events only twice: a place that fires again within
    `_TIGHT` with output written in between is switched off (`DISABLE`), since the writes
    themselves tell the streamer (every `_CHECK` characters). Places that fire without
    output in between (the cell computing) count down to a look at the clock. When a loop
    stops printing but goes on, some branch goes the other way: a place that has not fired
    yet, which then watches it. Everything is switched on again when the monitor is next
    armed."""
    global _disabled
    streamer = _active
    if streamer is None:
        return None
    written = streamer.written()
    key = (id(code) << 20) | at
    last = _seen.get(key)
    if last is not None and last[0] != written:
        now = _clock()
        if now - last[1] < _TIGHT:
            _disabled = True
            return sys.monitoring.DISABLE
        _seen[key] = (written, now)
        streamer.check(now)  # a slow loop that prints: its events look at the clock
        return None
    if last is None:
        _seen[key] = (written, _clock())
    streamer.spins -= 1
    if streamer.spins <= 0:
        streamer.tick()
    return None


def _on_event(code: Any, at: int, to: int = 0) -> Any:
    if code.co_filename.startswith(_OWN):  # a branch in Capture.write and the like
        return sys.monitoring.DISABLE
    return _fire(code, at)


def _on_start(code: Any, at: int) -> Any:
    if code.co_filename.startswith(_OWN):  # Capture.write and the like: never again
        return sys.monitoring.DISABLE
    return _fire(code, -1)


def _watched() -> int:
    events = sys.monitoring.events
    branches = getattr(events, "BRANCH_LEFT", 0) | getattr(events, "BRANCH_RIGHT", 0)
    return events.JUMP | events.PY_START | (branches or events.BRANCH)


def _tool_id() -> int | None:
    """A free `sys.monitoring` tool id, taken once (None when the cell's code took them)."""
    global _tool
    if _tool is None:
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is None:
            return None
        for candidate in (4, 3):
            if monitoring.get_tool(candidate) is None:
                monitoring.use_tool_id(candidate, "tooliscode output")
                events = monitoring.events
                for event in (events.JUMP, getattr(events, "BRANCH_LEFT", None),
                              getattr(events, "BRANCH_RIGHT", None), events.BRANCH):
                    if event is not None and event & _watched():
                        monitoring.register_callback(candidate, event, _on_event)
                monitoring.register_callback(candidate, events.PY_START, _on_start)
                _tool = candidate
                break
    elif sys.monitoring.get_tool(_tool) != "tooliscode output":
        return None  # freed and taken by the cell's code: leave it alone
    return _tool


def _arm(streamer: Streamer) -> None:
    global _disabled
    tool = _tool_id()
    if tool is not None:
        if _disabled:
            _disabled = False
            sys.monitoring.restart_events()
        _seen.clear()
        sys.monitoring.set_events(tool, _watched())
        streamer.spins = streamer.every = 1
        streamer.checked = _clock()
    streamer.armed = True


def _disarm(streamer: Streamer) -> None:
    streamer.armed = False
    tool = _tool_id()
    if tool is not None:
        sys.monitoring.set_events(tool, 0)
    _seen.clear()


def _sleep_sending(seconds: float) -> None:
    """`time.sleep`, after sending what waits (a sleeping cell runs no hook)."""
    streamer = _active
    if streamer is not None:
        streamer.flush()
    _sleep(seconds)


def install() -> None:
    """Put the sending `time.sleep` in place, once per interpreter, before any cell runs (a
    cell that took `from time import sleep` then has it too)."""
    if time.sleep is _sleep:
        _sleep_sending.__doc__ = _sleep.__doc__
        time.sleep = _sleep_sending
