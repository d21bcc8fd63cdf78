"""Approval inside code mode: a cell paused at a gated inner call and continued through each
framework's own approval mechanism.

For each framework, against the same flow with a direct (non-code) gated tool, which is the
framework's own pause and resume:
1. pause then resume in this process, per gated call, beyond the framework's own, on both
   runtimes (target <= 5 ms): each side's gated flow less the same flow with the call
   ungated, so that a code turn's own cost (running a cell) is not counted as the pause's;
   the four flows take turns, round after round, and the figure is the median of the
   rounds' own differences (`Paired`);
2. resume in a new process from the framework's serialized state over Redis, on the data
   runtime, beyond the framework's own resume from the same state (target <= 50 ms);
3. a cell making 100 ungated calls and one gated call: the calls made in total across the pause
   and the resume (exactly 101: nothing runs twice).

Each framework's rows come from one function (`FRAMEWORKS`), so one framework can be run
alone: python benchmarks/bench_approval.py --only openai_agents
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable

from _util import Paired, Row, load, machine, table, with_redis

PER_CALL_TARGET_S = 0.005
NEW_PROCESS_TARGET_S = 0.050
RUNTIMES = ("default", "data")


def per_call_row(framework: str, runtime: str, measured: Paired, note: str = "") -> Row:
    """Figure 1: pause then resume of one gated call, code against direct (`note`: more to
    say beside the figure). The verdict is on the median of each round's own difference."""
    ours, theirs = measured.net()
    extra = measured.extra
    return Row(f"{framework}: pause then resume in process, per gated call, beyond the "
               f"framework's own ({runtime} runtime)",
               f"{extra * 1e3:+.1f} ms (medians {ours * 1e3:.1f} ms vs {theirs * 1e3:.1f} ms "
               f"direct; {measured.best}{'; ' + note if note else ''}), {load()}", "<= 5 ms",
               "ok" if extra <= PER_CALL_TARGET_S else "over")


def new_process_row(framework: str, ours_s: float, theirs_s: float, note: str = "") -> Row:
    """Figure 2: resume in another process from serialized state, code against direct."""
    extra = ours_s - theirs_s
    return Row(f"{framework}: resume in a new process from serialized state over Redis, "
               "beyond the framework's own (data runtime)",
               f"{ours_s * 1e3:.1f} ms vs {theirs_s * 1e3:.1f} ms direct "
               f"({extra * 1e3:+.1f} ms{'; ' + note if note else ''}), {load()}", "<= 50 ms",
               "ok" if extra <= NEW_PROCESS_TARGET_S else "over")


def calls_row(framework: str, runtime: str, calls: int) -> Row:
    """Figure 3: the calls a cell of 100 ungated calls and one gated call made in all."""
    return Row(f"{framework}: calls made across pause and resume by a cell of 100 ungated "
               f"calls and one gated ({runtime} runtime)", str(calls), "exactly 101",
               "ok" if calls == 101 else "over")


def pydantic_ai_rows(rounds: int = 25, processes: int = 5) -> list[Row]:
    """PydanticAI: `DeferredToolRequests` naming the inner calls, `DeferredToolResults` for
    them (approval_pydantic_ai.py)."""
    import approval_pydantic_ai as pa

    rows = [per_call_row(pa.FRAMEWORK, runtime, asyncio.run(pa.per_call(runtime, rounds, 1.0)))
            for runtime in RUNTIMES]
    def in_new_processes(url: str) -> list[Row]:
        def info(figure: str, ours: float, direct: float) -> Row:
            return Row(f"{pa.FRAMEWORK}: the same {figure}", f"{ours * 1e3:.1f} ms vs "
                       f"{direct * 1e3:.1f} ms direct, {load()}", "-", "info")

        return [new_process_row(pa.FRAMEWORK, *pa.new_process(url, processes, warm=True)),
                info("with the conversation stored after the answer (Keeper "
                     "save=\"after_answer_lossy\")",
                     *pa.new_process(url, processes, warm=True, save="after_answer_lossy")),
                info("in a process's first resume (its runtime and start image not opened "
                     "yet)", *pa.new_process(url, processes, warm=False))]

    rows += with_redis(f"{pa.FRAMEWORK}: resume in a new process", in_new_processes)
    rows += [calls_row(pa.FRAMEWORK, runtime, asyncio.run(pa.calls_across(runtime)))
             for runtime in RUNTIMES]
    return rows


def openai_agents_rows(samples: int = 40) -> list[Row]:
    """The Agents SDK: `ToolApprovalItem`s for the inner calls in `result.interruptions`,
    `state.approve` and `Runner.run(agent, state)` (approval_openai_agents.py)."""
    import approval_openai_agents as oa

    rows = []
    for runtime in RUNTIMES:
        rows.append(per_call_row(oa.FRAMEWORK, runtime, oa.per_call(runtime, samples)))
    rows += with_redis(f"{oa.FRAMEWORK}: resume in a new process", lambda url: [
        new_process_row(oa.FRAMEWORK, *(m := oa.new_process(url, samples)).net(), m.best)])
    rows += [calls_row(oa.FRAMEWORK, runtime, oa.calls_across(runtime)) for runtime in RUNTIMES]
    return rows


def langchain_rows(samples: int = 40) -> list[Row]:
    """LangChain: `CodeModeMiddleware` under `HumanInTheLoopMiddleware`, in both of its modes
    (approval_langchain.py): what a reviewed call adds to a turn whose code makes it, against
    what it adds to the same turn with the model calling the tool itself (each less the turn
    calling an unreviewed twin), the flows taking turns."""
    import approval_langchain as lc

    rows = []
    for mode in lc.MODES:
        name = f"{lc.FRAMEWORK} ({mode})"
        rows += [per_call_row(name, runtime, lc.pause_resume_s(mode, runtime, samples))
                 for runtime in RUNTIMES]
        rows += [calls_row(name, runtime, lc.calls_across_pause(mode, runtime))
                 for runtime in RUNTIMES]
    return rows


FRAMEWORKS: dict[str, Callable[[], list[Row]]] = {"pydantic_ai": pydantic_ai_rows,
                                                  "openai_agents": openai_agents_rows,
                                                  "langchain": langchain_rows}
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
