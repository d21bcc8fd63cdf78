"""The token-economy bench on reduced data: both transcripts answer right, and code mode needs
fewer tokens (a large result, a conversation over a stateful backend), fewer round trips (a
chain of lookups, a conversation), and little more where results are small."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from tasks import filesystem, filesystem_chat, logs, small, tickets, tickets_chat, workflow
from tasks.base import Result, received
from tasks.conversation import run, transcript_seen
from tasks.transcript import run_task
from tooliscode import ToolRegistry
from tooliscode.prompt import ContextCounter, count_tokens, instructions
from tooliscode.runtime import python_note


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


@pytest.mark.parametrize("make", [filesystem_chat.conversation, tickets_chat.conversation])
def test_a_conversation_over_a_stateful_backend_costs_a_quarter(make):
    conversation = make()
    outcome = run(conversation)
    assert outcome.plain.correct and outcome.code.correct, (outcome.plain.problems,
                                                            outcome.code.problems)
    assert len(conversation.turns) >= 5 and len(outcome.code.answer) == len(conversation.turns)
    assert outcome.tokens_saved >= 0.75, outcome.tokens_saved
    assert outcome.code.round_trips < outcome.plain.round_trips


def test_the_backends_keep_state_across_turns():
    """What the conversation did is in each side's backend: the same end state."""
    fs = filesystem.FileSystem()
    fs.cd("documents")
    assert fs.mkdir("q3") is None
    assert fs.cp("notes.txt", "q3") == {"result": "notes.txt -> q3/notes.txt"}
    assert fs.cd("q3") == {"current_working_directory": "/alex/documents/q3"}
    assert fs.ls()["current_directory_content"] == ["notes.txt"]
    assert fs.cat("nope.txt") == {"error": "nope.txt: no such file in /alex/documents/q3"}
    system = tickets.TicketSystem()
    assert "error" in system.list_tickets()
    system.login("mia", "hunter2")
    new = system.create_ticket("x", priority=5)["id"]
    assert system.get_ticket(new)["status"] == "open" and "error" in system.get_ticket(107)


def test_the_plain_model_reads_earlier_turns_from_its_transcript():
    items = [{"role": "user", "content": "one"},
             {"type": "function_call", "call_id": "a", "name": "ls", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "a", "output": '{"x": 1}'},
             {"role": "assistant", "content": "[1]"},
             {"role": "user", "content": "two"}]
    seen = transcript_seen(items)
    assert seen.step == 0 and seen.before("ls") == [{"x": 1}] and seen.answers == ["[1]"]


def test_small_results_cost_at_most_a_tenth_more():
    """On the default runtime; the data runtime's guide also names its libraries and what
    becomes of figures, which each model call pays for."""
    outcome = run_task(small.task())
    assert outcome.plain.correct and outcome.code.correct, (outcome.plain, outcome.code)
    guide = {r: count_tokens(instructions(ToolRegistry([]), python=python_note(r)))
             for r in (None, "default")}
    richer = outcome.code.round_trips * (guide[None] - guide["default"])
    assert outcome.code.tokens - richer <= 1.10 * outcome.plain.tokens, (
        outcome.plain.tokens, outcome.code.tokens, richer)
