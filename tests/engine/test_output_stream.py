"""Output as it is printed: `Session.run(on_output=...)` and `arun`, on the suite's runtime.

Nothing here measures time. Where a chunk must arrive while the cell still runs, the cell
waits for the callback to say it came (a file the callback writes into the session folder),
so a chunk that never came fails the cell by its time limit instead.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from tooliscode import Limits, Session
from tooliscode.engine import _output

DONE = "got.txt"
"""The callback writes this into the session folder once the line it waits for came."""
UNTIL_DONE = f"while not os.path.exists({DONE!r}):\n    n += 1\n"
"""Cell code that computes (in Python, printing nothing) until the callback says so."""


def signalling(session, marker):
    """An `on_output` that writes `DONE` into `session`'s folder once `marker` has come."""
    seen: list[str] = []

    def on_output(stream, text):
        seen.append(text)
        if marker in "".join(seen):
            (session.workdir / DONE).write_text("yes")

    return on_output


def joined(chunks, stream=None):
    return "".join(text for s, text in chunks if stream in (None, s))


def merged(chunks):
    """Consecutive chunks of one stream as one: what order the streams came in."""
    out: list[list[str]] = []
    for stream, text in chunks:
        if out and out[-1][0] == stream:
            out[-1][1] += text
        else:
            out.append([stream, text])
    return [tuple(part) for part in out]


def test_chunks_come_whole_and_in_order_across_both_streams(session):
    chunks = []
    code = ("import sys\n"
            "for i in range(300):\n"
            "    print(f'out {i}')\n"
            "    if i % 50 == 49:\n"
            "        print(f'err {i}', file=sys.stderr)\n"
            "print('the end', end='')")
    r = session.run(code, on_output=lambda stream, text: chunks.append((stream, text)))
    assert r.ok, r.error
    want = []
    for i in range(300):
        want.append(("stdout", f"out {i}\n"))
        if i % 50 == 49:
            want.append(("stderr", f"err {i}\n"))
    want.append(("stdout", "the end"))
    assert merged(chunks) == merged(want)
    assert joined(chunks, "stdout") == r.stdout and joined(chunks, "stderr") == r.stderr
    # Chunks end at line ends: only the last one, the partial line, does not.
    assert all(text.endswith("\n") for _, text in chunks[:-1])


def test_nothing_printed_nothing_called(session):
    calls = []
    r = session.run("x = 1", on_output=lambda *a: calls.append(a))
    assert r.ok and calls == []


def test_all_chunks_come_before_run_returns_and_the_result_is_unchanged(session):
    plain = session.run("for i in range(50): print(i)")
    chunks = []
    streamed = session.run("for i in range(50): print(i)",
                           on_output=lambda s, t: chunks.append((s, t)))
    assert streamed.stdout == plain.stdout == joined(chunks)


def test_far_past_output_chars_everything_streams_and_the_result_is_bounded(tools):
    limits = Limits(output_chars=2_000, timeout_s=30)
    with Session(tools, limits=limits) as s:
        chunks = []
        r = s.run("for i in range(20_000): print(f'line {i}')",
                  on_output=lambda st, t: chunks.append(t))
        assert r.ok, r.error
        want = "".join(f"line {i}\n" for i in range(20_000))
        assert "".join(chunks) == want  # 88,890 characters, in order, none lost
        assert len(r.stdout) < 3_000 and r.truncated  # the result keeps head and tail
        assert max(len(c) for c in chunks) <= 32_768  # a chunk is bounded too


def test_past_stream_chars_streaming_stops_with_a_notice(tools):
    limits = Limits(output_chars=1_000, stream_chars=10_000, timeout_s=30)
    with Session(tools, limits=limits) as s:
        chunks = []
        r = s.run("for i in range(10_000): print(f'line {i}')\nprint('after')",
                  on_output=lambda st, t: chunks.append(t))
        assert r.ok, r.error
        text = "".join(chunks)
        notice = _output.cut_notice(10_000)
        assert text.endswith(notice) and text.count(notice) == 1
        assert text[:-len(notice)] == "".join(f"line {i}\n" for i in range(10_000))[:10_000]
        assert r.stdout.endswith("after\n")  # the result's tail is still there
        # and the next cell streams again, from nothing
        again = []
        assert s.run("print('next')", on_output=lambda st, t: again.append(t)).ok
        assert again == ["next\n"]


def test_a_slow_async_consumer_holds_the_guest_back(tools, monkeypatch):
    """Under `arun` the chunks wait for the callback on the caller's loop; the host never
    queues much more than `IN_FLIGHT_CHARS` of them: the guest waits instead."""
    monkeypatch.setattr(_output, "IN_FLIGHT_CHARS", 50_000)
    made = []
    real_init = _output.OutputStream.__init__

    def recording_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(_output.OutputStream, "__init__", recording_init)
    queued = []
    chunks = []

    async def slow(stream, text):
        queued.append(made[-1].queued)
        chunks.append(text)
        await asyncio.sleep(0)

    async def main():
        with Session(tools, limits=Limits(timeout_s=60, output_chars=1_000)) as s:
            r = await s.arun("for i in range(100_000): print(f'line {i}')", on_output=slow)
            assert r.ok, r.error

    asyncio.run(main())
    assert "".join(chunks) == "".join(f"line {i}\n" for i in range(100_000))[:1_000_000] + \
        _output.cut_notice(1_000_000)
    assert max(queued) <= 50_000 + 32_768 + 200  # the bound, one request, and the notice


def test_a_line_gets_out_while_the_cell_computes(session):
    """A line printed right after others (so it waits to go with the next batch) reaches the
    host while the cell computes in Python, without printing again: the cell waits for the
    callback to have it."""
    code = "import os\nn = 0\nfor i in range(100):\n    print(i)\nprint('last')\n" + UNTIL_DONE
    r = session.run(code, on_output=signalling(session, "last\n"))
    assert r.ok, r.error


def test_a_partial_line_gets_out_while_the_cell_computes(session):
    code = ("import os\nn = 0\nfor i in range(100):\n    print(i)\n"
            "print('waiting...', end='')\n" + UNTIL_DONE + "print(' done')")
    r = session.run(code, on_output=signalling(session, "waiting..."))
    assert r.ok, r.error
    assert r.stdout.endswith("waiting... done\n")


def test_a_loop_that_stops_printing_but_goes_on_still_sends(session):
    """The loop printed fast (its own events are then switched off): when it goes on without
    printing, its other branch takes over."""
    code = ("import os\n"
            "i = 0\n"
            "while True:\n"
            "    if i < 200:\n"
            "        print(f'line {i}')\n"
            f"    elif os.path.exists({DONE!r}):\n"
            "        break\n"
            "    i += 1\n")
    assert session.run(code, on_output=signalling(session, "line 199\n")).ok


def test_output_goes_before_a_tool_call_and_before_a_sleep(tools):
    seen_by_tool = []
    chunks = []

    def peek() -> str:
        """What the caller has seen so far."""
        seen_by_tool.append("".join(chunks))
        return "ok"

    with Session([*tools, peek], limits=Limits(timeout_s=20)) as s:
        done = s.workdir / DONE

        def on_output(stream, text):
            chunks.append(text)
            if "sleeping" in text:
                done.write_text("yes")

        code = ("import os, time\n"
                "for i in range(50):\n"
                "    print(i)\n"
                "peek()\n"
                "print('sleeping')\n"
                f"while not os.path.exists({DONE!r}):\n"
                "    time.sleep(0.01)\n")
        r = s.run(code, on_output=on_output)
        assert r.ok, r.error
        assert seen_by_tool == ["".join(f"{i}\n" for i in range(50))]


def test_writes_straight_to_the_descriptor_are_streamed(session):
    chunks = []
    r = session.run("import os\nos.write(1, 'héllo\\n'.encode())\nos.write(2, b'oops\\n')",
                    on_output=lambda s, t: chunks.append((s, t)))
    assert r.ok, r.error
    assert joined(chunks, "stdout") == "héllo\n" and joined(chunks, "stderr") == "oops\n"


def test_a_callback_that_raises_is_logged_and_the_cell_goes_on(session, caplog):
    calls = []

    def broken(stream, text):
        calls.append(text)
        raise RuntimeError("the UI is gone")

    with caplog.at_level(logging.ERROR, logger="tooliscode"):
        r = session.run("for i in range(100): print(i)\nx = 'finished'", on_output=broken)
    assert r.ok, r.error
    assert r.stdout == "".join(f"{i}\n" for i in range(100))
    assert session.run("x").value == "'finished'"
    assert len(calls) == 1  # not called again for that cell
    assert "on_output raised" in caplog.text and "the UI is gone" in caplog.text


def test_chunks_before_a_timeout_were_delivered(short_session):
    chunks = []
    r = short_session.run("print('started')\nwhile True: pass",
                          on_output=lambda s, t: chunks.append(t))
    assert not r.ok and r.error_type == "TimeoutError"
    assert chunks == ["started\n"]


def test_bad_callbacks_are_refused_before_anything_runs(session):
    async def coro(stream, text):
        pass

    with pytest.raises(TypeError, match="arun"):
        session.run("x = 1", on_output=coro)
    with pytest.raises(TypeError, match="callable"):
        session.run("x = 1", on_output="print")  # type: ignore[arg-type]
    assert session.run("x = 2").ok


def test_arun_calls_back_on_the_callers_loop_in_order(session):
    async def main():
        loop = asyncio.get_running_loop()
        got = []

        async def on_output(stream, text):
            assert asyncio.get_running_loop() is loop
            await asyncio.sleep(0)
            got.append(text)

        r = await session.arun("for i in range(1000): print(i)", on_output=on_output)
        assert r.ok, r.error
        assert "".join(got) == "".join(f"{i}\n" for i in range(1000))  # all, before arun returned
        plain = []
        assert (await session.arun("print('sync callback')",
                                   on_output=lambda s, t: plain.append(t))).ok
        assert plain == ["sync callback\n"]

    asyncio.run(main())


def test_a_cancelled_arun_stops_its_stream(session):
    async def main():
        got = []
        started = asyncio.Event()

        def on_output(stream, text):
            got.append(text)
            started.set()

        task = asyncio.ensure_future(session.arun(
            "import time\nprint('begun')\nwhile True: time.sleep(0.01)", on_output=on_output))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert got == ["begun\n"]

    asyncio.run(main())
    assert session.run("print('next')").ok


def test_the_pump_starts_with_the_first_chunk_and_ends_of_itself():
    """Under `arun` a cell that prints nothing makes no task; one that prints has its task
    end when the cell does, not cancelled (a cancelled task leaves its exception and frames
    in a cycle for the garbage collector, every cell). A callback that hangs is cancelled."""

    async def main():
        loop = asyncio.get_running_loop()
        got: list[str] = []
        quiet = _output.OutputStream(lambda s, t: got.append(t), None, loop)
        await asyncio.sleep(0)
        quiet.close()
        assert quiet._pump is None

        out = _output.OutputStream(lambda s, t: got.append(t), None, loop)
        out.emit("stdout", "hi\n")
        await out.drain()
        assert got == ["hi\n"]
        pump = out._pump
        assert pump is not None
        out.close()
        await asyncio.wait_for(asyncio.shield(pump), 5)
        assert pump.done() and not pump.cancelled()

        hung = asyncio.Event()

        async def never(stream, text):
            hung.set()
            await asyncio.Event().wait()

        stuck = _output.OutputStream(never, None, loop)
        stuck.emit("stdout", "x")
        await hung.wait()
        stuck.close()
        assert stuck._pump is not None
        with pytest.raises(asyncio.CancelledError):
            await stuck._pump

    asyncio.run(main())


def test_the_guests_own_code_is_never_watched_and_a_stopped_streamer_takes_no_more(session):
    """A branch in the guest's own code (`Capture.write`'s) is never watched: a monitor event
    there could send and end the streaming between a test of the streamer and its call
    (seen as "'NoneType' object has no attribute 'crossed'" from a print past the stream
    limit). And a streamer that has stopped lets go of a capture that still tells it."""
    r = session.run(
        "import sys\n"
        "from tooliscode_guest import capture, stream\n"
        "own = capture.Capture.write.__code__\n"
        "print(stream._on_event(own, 0) is sys.monitoring.DISABLE)\n"
        "out = sys.stdout\n"
        "s = stream.Streamer(None, out, sys.stderr)\n"
        "s.stop()\n"
        "out.streamer = s\n"
        "s.crossed(out)\n"
        "print(out.streamer is None, s.active is None)\n")
    assert r.ok, r.error
    assert r.stdout.split() == ["True", "True", "True"]
