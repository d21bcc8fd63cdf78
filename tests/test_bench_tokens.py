"""The token-economy bench on reduced data: both transcripts answer right, and code mode needs
fewer tokens (a large result) and fewer round trips (a chain of lookups)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from tasks import logs, workflow
from tasks.base import Result, received
from tasks.transcript import run_task
from tooliscode.prompt._tokens import ContextCounter, count_tokens


def test_large_result_costs_the_plain_side_and_not_code_mode():
    outcome = run_task(logs.task(scale=0.05))
    assert outcome.plain.correct and outcome.code.correct, (outcome.plain, outcome.code)
    # the whole search result is in the plain context and none of it in code mode's
    result = logs.task(scale=0.05).tools[0]("checkout-api", logs.DAY, "ERROR")
    assert outcome.plain.final_context > count_tokens(result)
    assert outcome.code.final_context < count_tokens(result) / 10
    assert outcome.tokens_saved > 0.9


def test_chain_of_lookups_takes_one_plain_turn_each():
    chain = run_task(workflow.task(scale=0.25))
    assert chain.plain.correct and chain.code.correct, (chain.plain, chain.code)
    assert chain.plain.round_trips == len(workflow.CHAIN) + 1
    assert chain.code.round_trips == 2
    assert chain.code.tokens < chain.plain.tokens
    # each plain call re-sends the growing history
    assert chain.plain.inputs == sorted(chain.plain.inputs)


def test_plain_model_reads_its_answer_from_the_transcript():
    """Results the plain model did not receive cannot reach its answer."""
    records = [{"order_id": "O-1"}, {"shipment_id": "S-1"}, {"tracking_number": "1Z"},
               {"last_scan_facility": "F-1"},
               {"name": "Hub X", "city": "Nowhere", "manager_id": "E-1"}, {"team_id": "TM-1"},
               {"escalation_policy_id": "P-1"},
               {"contact": {"name": "Nobody", "email": "nobody@ops.example"}}]
    seen = [[Result(tool, {}, value)] for (tool, *_), value in zip(workflow.CHAIN, records)]
    reply = workflow.task(scale=0.25).plain(seen)
    assert json.loads(reply.text or "") == {"contact": "Nobody", "email": "nobody@ops.example",
                                            "facility": "Hub X", "city": "Nowhere"}


def test_counter_counts_what_each_request_sends():
    body = {"tools": [{"type": "function", "name": "f"}], "instructions": "be brief",
            "input": [{"role": "user", "content": "hi"},
                      {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": "c", "output": '{"a": 1}'}]}
    parts = ['[{"type": "function", "name": "f"}]', "be brief", "hi", "f{}", '{"a": 1}']
    assert ContextCounter().request(body) == sum(map(count_tokens, parts))
    assert [[r.value for r in turn] for turn in received(body["input"])] == [[{"a": 1}]]
