"""Approval inside code mode: a cell paused at a gated inner call and continued through each
framework's own approval mechanism.

For each framework, against the same flow with a direct (non-code) gated tool, which is the
framework's own pause and resume:
1. pause then resume in this process, per gated call, beyond the framework's own, on both
   runtimes (target <= 5 ms);
2. resume in a new process from the framework's serialized state over Redis, on the data
   runtime, beyond the framework's own resume from the same state (target <= 50 ms);
3. a cell making 100 ungated calls and one gated call: the calls made in total across the pause
   and the resume (exactly 101: nothing runs twice).

Each framework's rows come from one function (`FRAMEWORKS`), so one framework can be run
alone: python benchmarks/bench_approval.py --only openai_agents
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from _util import Row, load, machine, table

PER_CALL_TARGET_S = 0.005
NEW_PROCESS_TARGET_S = 0.050
RUNTIMES = ("default", "data")


def per_call_row(framework: str, runtime: str, ours_s: float, theirs_s: float) -> Row:
    """Figure 1: pause then resume of one gated call, code against direct."""
    extra = ours_s - theirs_s
    return Row(f"{framework}: pause then resume in process, per gated call, beyond the "
               f"framework's own ({runtime} runtime)",
               f"{ours_s * 1e3:.1f} ms vs {theirs_s * 1e3:.1f} ms direct "
               f"({extra * 1e3:+.1f} ms), {load()}", "<= 5 ms",
               "ok" if extra <= PER_CALL_TARGET_S else "over")


def new_process_row(framework: str, ours_s: float, theirs_s: float) -> Row:
    """Figure 2: resume in another process from serialized state, code against direct."""
    extra = ours_s - theirs_s
    return Row(f"{framework}: resume in a new process from serialized state over Redis, "
               "beyond the framework's own (data runtime)",
               f"{ours_s * 1e3:.1f} ms vs {theirs_s * 1e3:.1f} ms direct "
               f"({extra * 1e3:+.1f} ms), {load()}", "<= 50 ms",
               "ok" if extra <= NEW_PROCESS_TARGET_S else "over")


def calls_row(framework: str, runtime: str, calls: int) -> Row:
    """Figure 3: the calls a cell of 100 ungated calls and one gated call made in all."""
    return Row(f"{framework}: calls made across pause and resume by a cell of 100 ungated "
               f"calls and one gated ({runtime} runtime)", str(calls), "exactly 101",
               "ok" if calls == 101 else "over")


FRAMEWORKS: dict[str, Callable[[], list[Row]]] = {}
"""Each framework's rows, by the name `--only` takes."""


def rows(only: list[str] | None = None) -> list[Row]:
    return [row for name, fn in FRAMEWORKS.items() if not only or name in only for row in fn()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(FRAMEWORKS),
                        help="the frameworks to measure (default: all)")
    args = parser.parse_args()
    print(machine())
    print(table(rows(args.only)))


if __name__ == "__main__":
    main()
