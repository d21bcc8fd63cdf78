"""Default guests start in slots kept ready between guests (`runtime/_wasmtime/pooling.py`).
Each case runs in a process of its own, to set how many slots there are (`TOOLISCODE_SLOTS`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

_PRELUDE = """
import ctypes, json, os, resource, shutil, tempfile
from pathlib import Path
from tooliscode import Limits
from tooliscode.engine._worker import Worker
from tooliscode.runtime import runtime_named
from tooliscode.runtime.component._in_place import Kept, locate

runtime = runtime_named("default")
folder = Path(tempfile.mkdtemp())


def memory(worker):
    def read(instance):
        found = locate(instance)
        return None if found is None else ctypes.string_at(found.address, found.size)
    return worker.between_turns(read)


def pooled(worker):
    return worker.instance.tier is runtime.tiers.current
"""


def _run(body: str, slots: int) -> dict:
    env = {**os.environ, "TOOLISCODE_SLOTS": str(slots), "TOOLISCODE_RUNTIME": "default"}
    out = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(body)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_slot_used_before_holds_nothing_of_its_last_guest():
    seen = _run("""
        secret = os.urandom(24).hex()
        first = Worker(runtime, folder, Limits())
        assert first.call({"op": "cell", "code": f"kept = {secret!r} * 3"})["ok"]
        before = memory(first)
        first.shutdown()
        first.join(10)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        second = Worker(runtime, folder, Limits())
        result = second.call({"op": "cell", "code": "print('kept' in globals())"})
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        after = memory(second)
        kept = second.between_turns(lambda instance: Kept.take(instance, grow=False))
        print(json.dumps({"control": before is not None and (secret * 3).encode() in before,
                          "found": after is not None,
                          "leaked": after is not None and secret.encode() in after,
                          "stdout": result.get("stdout"), "pooled": pooled(second),
                          "faults": faults, "renewable": kept is not None}))
        second.shutdown()
        second.join(10)
    """, slots=1)
    assert seen["control"], "the secret was not found where it was put: the check is blind"
    assert seen["found"] and seen["pooled"]
    assert not seen["leaked"], "a guest read what the slot's last guest left in its memory"
    assert seen["stdout"]["text"] == "False\n"
    assert seen["renewable"], "a guest in a slot can no longer be renewed in place"
    assert seen["faults"] < 100, f"the slot's pages were not kept resident: {seen['faults']}"


def test_a_guest_that_finds_every_slot_taken_starts_without_one():
    seen = _run("""
        workers = [Worker(runtime, folder, Limits()) for _ in range(4)]
        values = [w.call({"op": "cell", "code": "x = 6 * 7\\nx"}).get("value") for w in workers]
        kinds = [pooled(w) for w in workers]
        outdated = [w.instance.outdated for w in workers]
        for w in workers:
            w.shutdown()
        for w in workers:
            w.join(10)
        again = Worker(runtime, folder, Limits())
        value = again.call({"op": "cell", "code": "1 + 1"}).get("value")
        print(json.dumps({"values": values, "pooled": kinds, "outdated": outdated,
                          "again": [value, pooled(again)]}))
        again.shutdown()
        again.join(10)
    """, slots=2)
    assert seen["values"] == ["42"] * 4
    assert seen["pooled"] == [True, True, False, False]
    assert seen["outdated"] == [False] * 4  # a pool keeps and hands out either kind
    assert seen["again"] == ["2", True]  # the slots came back


def test_no_slots_when_told_none():
    seen = _run("""
        workers = [Worker(runtime, folder, Limits()) for _ in range(10)]
        values = [w.call({"op": "cell", "code": "3"}).get("value") for w in workers]
        print(json.dumps({"values": values, "pooled": [pooled(w) for w in workers],
                          "spilled": runtime.tiers.current.spilled is not None}))
        for w in workers:
            w.shutdown()
    """, slots=0)  # 10: more than the 8 slots a pool has by default
    assert seen == {"values": ["3"] * 10, "pooled": [True] * 10, "spilled": False}


def test_a_count_of_slots_that_is_no_number_is_refused():
    env = {**os.environ, "TOOLISCODE_SLOTS": "eight", "TOOLISCODE_RUNTIME": "default"}
    out = subprocess.run([sys.executable, "-c", "from tooliscode import Session\n"
                          "Session([]).run('1')"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode != 0
    assert "TOOLISCODE_SLOTS must be a whole number of slots, not 'eight'" in out.stderr
