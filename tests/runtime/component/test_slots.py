"""Default guests made when one is wanted start in slots kept ready between guests
(`runtime/_wasmtime/pooling.py`); a pool's guests, made ahead of need, do not. Each case runs
in a process of its own, to set how many slots there are (`TOOLISCODE_SLOTS`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

_PRELUDE = """
import ctypes, json, os, resource, tempfile
from pathlib import Path
from tooliscode import Limits
from tooliscode.engine._worker import Worker
from tooliscode.runtime import runtime_named
from tooliscode.runtime.component._in_place import locate

runtime = runtime_named("default")
folder = Path(tempfile.mkdtemp())


def memory(worker):
    def read(instance):
        found = locate(instance)
        return None if found is None else ctypes.string_at(found.address, found.size)
    return worker.between_turns(read)


def slotted(worker):
    return worker.instance.tier.slotted


def end(*workers):
    for w in workers:
        w.shutdown()
    for w in workers:
        w.join(10)
"""


def _run(body: str, slots: int | str) -> dict:
    env = {**os.environ, "TOOLISCODE_SLOTS": str(slots), "TOOLISCODE_RUNTIME": "default"}
    out = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(body)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_slot_used_before_holds_nothing_of_its_last_guest_and_keeps_its_pages():
    seen = _run("""
        secret = os.urandom(24).hex()
        first = Worker(runtime, folder, Limits())
        assert first.call({"op": "cell", "code": f"kept = {secret!r} * 3"})["ok"]
        before = memory(first)
        end(first)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        second = Worker(runtime, folder, Limits())
        result = second.call({"op": "cell", "code": "print('kept' in globals())"})
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        after = memory(second)
        was_slotted = slotted(second)
        baseline = second.between_turns(lambda instance: instance.keep_baseline())
        second.call({"op": "cell", "code": "y = 6 * 7"})
        renewed = [second.between_turns(lambda instance: instance.renew(folder)) for _ in "ab"]
        look = second.call({"op": "cell", "code": "print('y' in globals(), 'kept' in globals())"})
        print(json.dumps({"control": before is not None and (secret * 3).encode() in before,
                          "found": after is not None,
                          "leaked": after is not None and secret.encode() in after,
                          "stdout": result.get("stdout"), "slotted": was_slotted,
                          "faults": faults, "baseline": baseline, "renewed": renewed,
                          "in_place": second.instance._kept is not None,
                          "slotted_after": slotted(second), "look": look.get("stdout")}))
        end(second)
    """, slots=1)
    assert seen["control"], "the secret was not found where it was put: the check is blind"
    assert seen["found"] and seen["slotted"]
    assert not seen["leaked"], "a guest read what the slot's last guest left in its memory"
    assert seen["stdout"]["text"] == "False\n"
    assert seen["faults"] < 100, f"the slot's pages were not kept resident: {seen['faults']}"
    # Its memory is the slot's, which a mirror would copy whole: its first renewal starts it
    # again off the slot, and from then on it is renewed in place.
    assert seen["baseline"] is True and seen["renewed"] == [True, True]
    assert not seen["slotted_after"] and seen["in_place"]
    assert seen["look"]["text"] == "False False\n"


def test_a_guest_that_finds_every_slot_taken_starts_without_one():
    seen = _run("""
        workers = [Worker(runtime, folder, Limits()) for _ in range(4)]
        values = [w.call({"op": "cell", "code": "x = 6 * 7\\nx"}).get("value") for w in workers]
        kinds = [slotted(w) for w in workers]
        outdated = [w.instance.outdated for w in workers]
        end(*workers)
        again = Worker(runtime, folder, Limits())
        value = again.call({"op": "cell", "code": "1 + 1"}).get("value")
        print(json.dumps({"values": values, "slotted": kinds, "outdated": outdated,
                          "again": [value, slotted(again)]}))
        end(again)
    """, slots=2)
    assert seen["values"] == ["42"] * 4
    assert seen["slotted"] == [True, True, False, False]
    assert seen["outdated"] == [False] * 4
    assert seen["again"] == ["2", True]  # the slots came back


def test_a_pools_guests_leave_the_slots_to_guests_wanted_now():
    seen = _run("""
        import time
        from tooliscode.engine._live import pool_for

        pool = pool_for(runtime)
        now = pool.acquire()  # none ready: made now, and the pool refills behind it
        deadline = time.monotonic() + 60
        while not pool.idle() and time.monotonic() < deadline:
            time.sleep(0.01)
        ahead = pool.idle()[0]
        ahead.booted.wait(60)
        values = [w.call({"op": "cell", "code": "2 + 2"}).get("value") for w in (now, ahead)]
        while ahead.pool_baseline is None and time.monotonic() < deadline:
            time.sleep(0.01)
        print(json.dumps({"values": values, "slotted": [slotted(now), slotted(ahead)],
                          "renewable": ahead.pool_baseline.result(60)}))
        end(now)
    """, slots=2)
    assert seen == {"values": ["4", "4"], "slotted": [True, False], "renewable": True}


def test_a_code_tools_sandbox_started_ahead_takes_no_slot():
    seen = _run("""
        from tooliscode import Tool
        from tooliscode.codetool import CodeTool, Toolbox

        def ping() -> str:
            \"\"\"Answers pong.\"\"\"
            return "pong"

        tools = Toolbox.of([Tool.from_function(ping)])
        with CodeTool(tools, runtime=runtime) as code:
            ahead = code.take()
            ahead.start(tools)  # as a spare is, before any code asks for it
            ok = code.run_code("ping()", sandbox=ahead).ok
            now = Worker(runtime, folder, Limits())  # beside it, a guest wanted now
            print(json.dumps({"ok": ok, "slotted": [slotted(ahead.session._state.worker),
                                                    slotted(now)]}))
            end(now)
    """, slots=2)
    assert seen == {"ok": True, "slotted": [False, True]}


def test_no_slots_when_told_none():
    seen = _run("""
        workers = [Worker(runtime, folder, Limits()) for _ in range(3)]
        values = [w.call({"op": "cell", "code": "3"}).get("value") for w in workers]
        print(json.dumps({"values": values, "slotted": [slotted(w) for w in workers],
                          "twin": runtime.tiers.current.slots is not None}))
        end(*workers)
    """, slots=0)
    assert seen == {"values": ["3"] * 3, "slotted": [False] * 3, "twin": False}


def test_a_count_of_slots_that_is_no_number_is_refused():
    env = {**os.environ, "TOOLISCODE_SLOTS": "eight", "TOOLISCODE_RUNTIME": "default"}
    out = subprocess.run([sys.executable, "-c", "from tooliscode import Session\n"
                          "Session([]).run('1')"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode != 0
    assert "TOOLISCODE_SLOTS must be a whole number of slots, not 'eight'" in out.stderr


def test_slots_no_guest_holds_for_a_while_are_let_go_and_made_again_when_wanted():
    seen = _run("""
        import time
        from tooliscode.runtime._wasmtime import tiers

        tiers.SLOTS_IDLE_S = 0.3
        held = Worker(runtime, folder, Limits())
        held.call({"op": "cell", "code": "1"})
        time.sleep(0.6)
        kept_while_held = runtime.tiers.current.slots is not None  # a guest holds one
        end(held)
        deadline = time.monotonic() + 30  # the reaper's wait, on a busy machine too
        while runtime.tiers.current.slots is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        let_go = runtime.tiers.current.slots is None
        bare = Worker(runtime, folder, Limits())  # none now: it asks for them again
        value = bare.call({"op": "cell", "code": "2 + 3"}).get("value")
        deadline = time.monotonic() + 30
        while runtime.tiers.current.slots is None and time.monotonic() < deadline:
            time.sleep(0.01)
        again = Worker(runtime, folder, Limits())
        again_value = again.call({"op": "cell", "code": "2 * 3"}).get("value")
        print(json.dumps({"kept_while_held": kept_while_held, "let_go": let_go,
                          "bare": [value, slotted(bare)], "again": [again_value, slotted(again)],
                          "engines": len(runtime.ticker._engines)}))
        end(bare, again)
    """, slots=2)
    assert seen["kept_while_held"] and seen["let_go"]
    assert seen["bare"] == ["5", False]
    assert seen["again"] == ["6", True]
    assert seen["engines"] == 2  # the one let go is ticked no more; the new one is


def test_guests_made_from_several_threads_while_slots_come_and_go_all_run():
    """Slots let go and made again while other threads take and leave them: no guest runs on
    an engine freed under it, and every count comes back even."""
    seen = _run("""
        import random, threading, time
        from tooliscode.runtime._wasmtime import tiers

        tiers.SLOTS_IDLE_S = 0.02
        errors, kinds = [], []

        def work(n):
            for i in range(12):
                try:
                    w = Worker(runtime, Path(tempfile.mkdtemp()), Limits())
                    value = w.call({"op": "cell", "code": f"{n} * {i}"}).get("value")
                    if value != str(n * i):
                        errors.append(value)
                    kinds.append(slotted(w))
                    end(w) if random.random() < 0.3 else w.shutdown()
                    time.sleep(random.random() * 0.04)
                except Exception as exc:
                    errors.append(repr(exc))

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        deadline = time.monotonic() + 30  # the last guests end on their own threads
        while runtime.tiers._slotted and time.monotonic() < deadline:
            time.sleep(0.01)
        print(json.dumps({"errors": errors[:3], "ran": len(kinds),
                          "slotted": sum(kinds), "held": runtime.tiers._slotted}))
    """, slots=2)
    assert seen["errors"] == [] and seen["ran"] == 48
    assert seen["slotted"] > 0
    assert seen["held"] == 0
