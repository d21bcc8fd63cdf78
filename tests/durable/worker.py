"""A worker process for the durable-session tests: JSON lines in ({"key", "code"}), one JSON
line out per call, sessions kept in the store named on the command line (and on the runtime
named after the store's settings, if any)."""

from __future__ import annotations

import json
import sys

from tooliscode import Limits, Session
from tooliscode.durable import FolderStore, Keeper, RedisStore


def bump(n: int) -> int:
    """A host tool the conversation's code calls."""
    return n + 100


def main() -> None:
    kind, where, on_error, lease_s, wait_s = sys.argv[1:6]
    runtime = sys.argv[6] if len(sys.argv) > 6 else None
    save = sys.argv[7] if len(sys.argv) > 7 else "before_answer"
    store = RedisStore(where, timeout_s=1.0) if kind == "redis" else FolderStore(where)
    limits = Limits(timeout_s=60)
    keeper = Keeper(store, lease_s=float(lease_s), wait_s=float(wait_s),
                    on_store_error=on_error, save=save)

    def make() -> Session:
        return Session([bump], limits=limits, runtime=runtime)

    def restore(blob: bytes) -> Session:
        return Session.restore(blob, [bump], limits=limits, runtime=runtime, announce=False)

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        call = json.loads(line)
        try:
            session, notice = keeper.checkout(call["key"], make, restore)
        except Exception as exc:  # noqa: BLE001 - reported to the test as data
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
            continue
        result = session.run(call["code"])
        unsaved = keeper.checkin(call["key"])  # stored before the answer is printed
        notices = [n for n in (notice, unsaved) if n] or list(result.notices)
        print(json.dumps({"ok": result.ok, "stdout": result.stdout, "error": result.error,
                          "notices": notices}), flush=True)


if __name__ == "__main__":
    main()
