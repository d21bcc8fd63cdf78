"""Tokens and round trips: plain tool calling against code mode on eight scripted tasks and two
multi-turn conversations.

Each task (benchmarks/tasks/) is one question over a realistic tool collection: a 60-tool
CRM, a log search returning megabytes, a paginated API, 1,000 tools to search, the store
demo's join, a top-N over a large table, a chain of eight dependent lookups, and a small
question where code mode has little to gain. Each conversation is six user turns over a
stateful backend whose results are small (a file system of 18 tools, a ticket system of 13),
every turn's answer checked. Both sides run through the real loop
(`tooliscode.openai.run_conversation`, the `openai` client, `ScriptedServer`): the plain side
with every tool's schema in each request and every result in the history, making independent
calls in parallel in one turn (its fewest round trips); the code side through `ToolIsCode`.
Input tokens are counted from each request the scripted model received (tool definitions,
instructions, history) and summed over the model calls; both answers are checked against a
direct computation on the host.

Run: python benchmarks/bench_tokens.py   (prints one row per task, the totals and the targets)
"""

from __future__ import annotations

import time

from _util import Row, machine, table
from tasks import all_conversations, all_tasks
from tasks.base import LARGE, MULTI, SMALL
from tasks.conversation import CONVERSATION, run
from tasks.transcript import Outcome, run_task
from tooliscode.prompt._tokens import TOKENIZER

TOKEN_TARGET = 0.90
"""Fewer context tokens on every large-result task."""
TRIP_TARGET = 0.30
"""Fewer model round trips on every multi-step task."""
CONVERSATION_TARGET = 0.75
"""Fewer context tokens on every multi-turn conversation (and fewer model calls)."""
SMALL_TARGET = 0.10
"""At most this much more than plain calling where results are small."""
CONTEXT_WINDOW = 400_000
"""A GPT-5-class window: a plain transcript past it could not have run as measured."""

HEAD = ("task", "kind", "tokens plain", "tokens code", "tokens", "last context plain",
        "last context code", "round trips", "round trips saved", "answers plain/code")


def measure(scale: float = 1.0) -> list[Outcome]:
    return [run_task(task) for task in all_tasks(scale)] + [run(c) for c in all_conversations()]


def rows(outcomes: list[Outcome] | None = None) -> list[Row]:
    outcomes = measure() if outcomes is None else outcomes
    out = [Row("tokens counted with", str(TOKENIZER), "-", "-")]
    for o in outcomes:
        targets = [f">= {TOKEN_TARGET:.0%} fewer tokens"] * (LARGE in o.task.kinds) + \
                  [f">= {TRIP_TARGET:.0%} fewer round trips"] * (MULTI in o.task.kinds) + \
                  [f">= {CONVERSATION_TARGET:.0%} fewer tokens, fewer round trips"] * (
                      CONVERSATION in o.task.kinds) + \
                  [f"<= {SMALL_TARGET:.0%} more tokens"] * (SMALL in o.task.kinds)
        out.append(Row(f"{o.task.name} [{_kinds(o)}]",
                       f"input tokens {o.plain.tokens:,} -> {o.code.tokens:,} "
                       f"({_change(o.tokens_saved)}); round trips {o.plain.round_trips} -> "
                       f"{o.code.round_trips} ({_change(o.trips_saved, 0)}); answers "
                       f"{_ok(o.plain.correct)}/{_ok(o.code.correct)}",
                       "; ".join(targets) or "-", _verdict(o)))
    plain, code = sum(o.plain.tokens for o in outcomes), sum(o.code.tokens for o in outcomes)
    trips = [sum(o.plain.round_trips for o in outcomes), sum(o.code.round_trips for o in outcomes)]
    right = sum(o.plain.correct and o.code.correct for o in outcomes)
    out.append(Row(f"all {len(outcomes)} tasks and conversations",
                   f"input tokens {plain:,} -> {code:,} "
                   f"({_change(1 - code / plain)}); round trips {trips[0]} -> {trips[1]}; "
                   f"{right}/{len(outcomes)} tasks answered right by both",
                   "every answer right", "ok" if right == len(outcomes) else "WRONG"))
    return out + [_target_row(outcomes, LARGE, "tokens", TOKEN_TARGET),
                  _target_row(outcomes, MULTI, "round trips", TRIP_TARGET),
                  _target_row(outcomes, CONVERSATION, "tokens", CONVERSATION_TARGET),
                  _target_row(outcomes, CONVERSATION, "round trips", 1e-9)]


def _target_row(outcomes: list[Outcome], kind: str, what: str, target: float) -> Row:
    tagged = [o for o in outcomes if kind in o.task.kinds]
    saved = [o.tokens_saved if what == "tokens" else o.trips_saved for o in tagged]
    worst = min(saved, default=0.0)
    return Row(f"{kind} tasks ({len(tagged)}): fewer {what}, least saving",
               f"{_pct(worst)} (each: {', '.join(map(_pct, saved))})",
               f">= {target:.0%} on each" if target >= 0.01 else "fewer on each",
               "ok" if tagged and worst >= target else "missed")


def _verdict(o: Outcome) -> str:
    if not (o.plain.correct and o.code.correct):
        return "WRONG answer"
    kinds = o.task.kinds
    met = (LARGE not in kinds or o.tokens_saved >= TOKEN_TARGET) and \
          (MULTI not in kinds or o.trips_saved >= TRIP_TARGET) and \
          (CONVERSATION not in kinds or o.tokens_saved >= CONVERSATION_TARGET
           and o.trips_saved > 0) and \
          (SMALL not in kinds or o.tokens_saved >= -SMALL_TARGET)
    return "ok" if met else "missed"


def _kinds(o: Outcome) -> str:
    return ", ".join(sorted(o.task.kinds))


def _pct(share: float, digits: int = 1) -> str:
    """A percentage that does not round a near-total saving up to 100%."""
    while digits < 4 and round(abs(share) * 100, digits) == 100 != abs(share) * 100:
        digits += 1
    return f"{share * 100:.{digits}f}%"


def _change(saved: float, digits: int = 1) -> str:
    return f"{_pct(saved, digits)} fewer" if saved >= 0 else f"{_pct(-saved, digits)} more"


def _ok(correct: bool) -> str:
    return "right" if correct else "WRONG"


def detail(outcomes: list[Outcome]) -> str:
    """The per-task table with a column per figure."""
    lines = [(o.task.name, _kinds(o), f"{o.plain.tokens:,}", f"{o.code.tokens:,}",
              _change(o.tokens_saved), f"{o.plain.final_context:,}",
              f"{o.code.final_context:,}", f"{o.plain.round_trips} -> {o.code.round_trips}",
              _change(o.trips_saved, 0), f"{_ok(o.plain.correct)}/{_ok(o.code.correct)}")
             for o in outcomes]
    plain, code = sum(o.plain.tokens for o in outcomes), sum(o.code.tokens for o in outcomes)
    p_trips = sum(o.plain.round_trips for o in outcomes)
    c_trips = sum(o.code.round_trips for o in outcomes)
    right = sum(o.plain.correct for o in outcomes), sum(o.code.correct for o in outcomes)
    lines.append(("total", "", f"{plain:,}", f"{code:,}", _change(1 - code / plain), "", "",
                  f"{p_trips} -> {c_trips}", _change(1 - c_trips / p_trips, 0),
                  f"{right[0]}/{len(outcomes)} right, {right[1]}/{len(outcomes)} right"))
    return table(lines, HEAD)


def main() -> None:
    print(f"machine: {machine()}\ntokens counted with: {TOKENIZER}\n"
          "input tokens: tool definitions + instructions + history, as sent with each model "
          "call, summed over the calls\n")
    started = time.perf_counter()
    outcomes = measure()
    took = time.perf_counter() - started
    print(detail(outcomes))
    too_big = [o.task.name for o in outcomes if o.plain.final_context > CONTEXT_WINDOW]
    if too_big:
        print(f"\nplain contexts past {CONTEXT_WINDOW:,} tokens (more than a GPT-5-class "
              f"window holds; a real run would fail or have to cut results): "
              f"{'; '.join(too_big)}")
    for o in outcomes:
        for side, ran in (("plain", o.plain), ("code", o.code)):
            if not ran.correct:
                expected = getattr(o.task, "expected", None)
                print(f"\nWRONG ({side}) {o.task.name}: expected {expected!r}, got "
                      f"{ran.answer!r}" + "".join(f"\n  {p}" for p in ran.problems))
    print()
    print(table(rows(outcomes)))
    print(f"\n{len(outcomes)} tasks and conversations, both sides, in {took:.0f} s")


if __name__ == "__main__":
    main()
