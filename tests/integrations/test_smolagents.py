"""smolagents adapter: real `CodeAgent` runs with `WasmExecutor` and a scripted `Model` (a
subclass returning scripted `ChatMessage`s, as smolagents' own tests script one): tools and
managed agents on the host, `final_answer`, state across steps and runs, limits, isolation."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from smolagents import (
    AgentError,
    AgentLogger,
    ChatMessage,
    CodeAgent,
    FinalAnswerTool,
    LogLevel,
    MessageRole,
    Model,
    tool,
)
from tooliscode import Limits
from tooliscode.durable import FolderStore
from tooliscode.integrations.smolagents import WasmExecutor

ORDERS = [{"id": i, "customer": f"c{i % 4}", "total": (i * 37) % 250,
           "status": ("open", "paid")[i % 2]} for i in range(40)]
BIG = [o for o in ORDERS if o["status"] == "paid" and o["total"] > 100]
HOST_THREADS: set[str] = set()
QUIET = AgentLogger(level=LogLevel.OFF)


@tool
def list_orders(status: str) -> list:
    """All orders with one status.

    Args:
        status: "open" or "paid".
    """
    HOST_THREADS.add(threading.current_thread().name)
    return [o for o in ORDERS if o["status"] == status]


@tool
def get_customer(customer_id: str) -> dict:
    """One customer's record.

    Args:
        customer_id: The customer's id, e.g. "c1".
    """
    if not customer_id.startswith("c"):
        raise AgentError(f"no customer {customer_id!r}", QUIET)
    if customer_id == "c0":
        raise KeyError("c0 is archived")
    return {"id": customer_id, "tier": "gold" if customer_id in ("c1", "c3") else "basic"}


class Answer(FinalAnswerTool):
    """The agent's own final-answer tool: the value the code gives it goes through it."""

    def forward(self, answer: Any) -> Any:
        return f"answer: {answer}"


class Scripted(Model):
    """Replies with the next scripted code block; keeps the messages of each call."""

    def __init__(self, *codes: str):
        super().__init__(model_id="scripted")
        self.codes = list(codes)
        self.inputs: list[list[Any]] = []

    def generate(self, messages: list[Any], stop_sequences: Any = None,
                 **kwargs: Any) -> ChatMessage:
        self.inputs.append(list(messages))
        code = self.codes.pop(0)
        return ChatMessage(role=MessageRole.ASSISTANT,
                           content=f"Thought: next step.\n<code>\n{code}\n</code>")


def agent(executor: WasmExecutor, *codes: str, **options: Any) -> CodeAgent:
    return CodeAgent(tools=[list_orders, get_customer, Answer()], model=Scripted(*codes),
                     executor=executor, verbosity_level=-1, **options)


def steps(run: CodeAgent) -> list[Any]:
    return [s for s in run.memory.steps if hasattr(s, "code_action")]


@pytest.fixture(scope="module")
def executor():
    ex = WasmExecutor(limits=Limits(timeout_s=3))
    yield ex
    ex.cleanup()


def test_tools_run_on_the_host_and_final_answer_ends_the_run(executor):
    run = agent(executor,
                "import asyncio\n"
                "orders = list_orders(status='paid')\n"
                "big = [o for o in orders if o['total'] > 100]\n"
                "ids = sorted({o['customer'] for o in big})\n"
                "people = await asyncio.gather(*(get_customer(customer_id=c) for c in ids))\n"
                "print(len(big), [p['id'] for p in people if p['tier'] == 'gold'])",
                "final_answer(sum(o['total'] for o in big))")
    HOST_THREADS.clear()
    assert run.run("How much did big paid orders bring?") == \
        f"answer: {sum(o['total'] for o in BIG)}"
    first, last = steps(run)
    gold = sorted({o["customer"] for o in BIG} & {"c1", "c3"})
    assert first.observations == f"Execution logs:\n{len(BIG)} {gold}\n" \
        "Last output from code snippet:\nNone"
    assert last.is_final_answer and first.error is None
    assert HOST_THREADS  # the tool's own code ran, in this process


def test_failing_tools_raise_tool_error_and_a_failing_cell_is_the_steps_error(executor):
    run = agent(executor,
                "for c in ('x1', 'c0'):\n"
                "    try:\n"
                "        get_customer(customer_id=c)\n"
                "    except ToolError as e:\n"
                "        print('failed:', e)",
                "rows = list_orders(status='open')\nrows[99]",
                "final_answer(len(rows))")
    assert run.run("go") == "answer: 20"
    tools, broken, _ = steps(run)
    assert tools.observations.splitlines()[1:3] == [
        "failed: no customer 'x1'", "failed: KeyError: 'c0 is archived'"]
    assert "IndexError: list index out of range" in str(broken.error)
    assert "rows[99]" in str(broken.error)
    # The model's next call was shown the error, and the variable made before it survived.
    assert "IndexError" in str(run.model.inputs[2][-1].content)


def test_state_lasts_across_steps_and_runs_and_agents_are_apart(executor):
    first = agent(executor, "total = 40", "final_answer(total)", "final_answer(total + extra)")
    assert first.run("set") == "answer: 40"
    assert first.run("again", additional_args={"extra": 2}) == "answer: 42"
    other = WasmExecutor()
    try:
        second = agent(other, "final_answer('total' in globals())")
        assert second.run("look") == "answer: False"
    finally:
        other.cleanup()


def test_a_runaway_loop_is_stopped_and_the_run_goes_on(executor):
    run = agent(executor, "kept = 1", "while True:\n    pass", "final_answer('kept' in globals())")
    assert run.run("spin") == "answer: True"  # the session came back, and said so
    error = str(steps(run)[1].error)
    assert "TimeoutError" in error and "3 s" in error and "before this cell" in error


def test_a_memory_bomb_is_a_memory_error_and_the_interpreter_lives_on(executor):
    run = agent(executor, "kept = 2\nblob = bytearray(1 << 30)",
                "final_answer(kept)")
    assert run.run("allocate") == "answer: 2"
    assert "MemoryError" in str(steps(run)[0].error)


def test_the_host_is_untouched(executor, tmp_path, monkeypatch):
    monkeypatch.setenv("TIC_HOST_SECRET", "s3cret")
    target = tmp_path / "written-by-code.txt"
    probe = (
        "import os, subprocess\n"
        "seen = [os.environ.get('TIC_HOST_SECRET')]\n"
        f"for attempt in (lambda: open({str(target)!r}, 'w').write('x'),\n"
        "                lambda: subprocess.run(['true']),\n"
        "                lambda: open('/etc/hostname').read()):\n"
        "    try:\n"
        "        attempt()\n"
        "        seen.append('done')\n"
        "    except Exception as e:\n"
        "        seen.append(type(e).__name__)\n"
        "final_answer(seen)")
    run = agent(executor, probe)
    outcome = run.run("probe")
    assert outcome.startswith("answer: [None, ") and "done" not in outcome
    assert not target.exists()


def test_managed_agents_are_called_on_the_host(executor):
    helper = CodeAgent(tools=[], model=Scripted("final_answer('42 apples')"), name="counter",
                       description="Counts apples.", verbosity_level=-1)
    run = agent(executor, "report = counter(task='count the apples')\nfinal_answer(report)",
                managed_agents=[helper])
    outcome = run.run("How many apples?")
    assert outcome.startswith("answer: ") and "42 apples" in outcome
    assert "count the apples" in str(helper.memory.steps[0].task)


def test_a_store_keeps_the_interpreter_for_another_executor(tmp_path):
    store = FolderStore(tmp_path / "store")
    one = WasmExecutor(store=store, conversation="user-7")
    try:
        agent(one, "kept = 'across processes'\nfinal_answer(kept)").run("set")
    finally:
        one.cleanup()
    two = WasmExecutor(store=store, conversation="user-7")
    try:
        assert agent(two, "final_answer(kept)").run("get") == "answer: across processes"
    finally:
        two.cleanup()
    with pytest.raises(ValueError, match="conversation="):
        WasmExecutor(store=store)


def test_variables_arrive_as_json_values(executor):
    run = agent(executor, "final_answer([threshold + 1, type(rows).__name__])")
    assert run.run("go", additional_args={"threshold": 100, "rows": (1, 2)}) == \
        "answer: [101, 'list']"


def test_defaults_are_the_frameworks_when_code_gives_only_what_is_required() -> None:
    """smolagents takes tools as `Tool`s only (`@tool` makes one); its agents call them as
    `tool(**arguments)`."""
    from _defaults import CODE, ONLY_REQUIRED, post, same_as_direct

    posting = tool(post)
    executor = WasmExecutor()
    executor.send_tools({"post": posting})
    try:
        same_as_direct(lambda: posting(**ONLY_REQUIRED), lambda: executor(CODE))
    finally:
        executor.cleanup()


def test_on_output_gets_what_a_step_prints_as_it_runs():
    """smolagents shows a step's output as its logs once the code ends: what it prints
    meanwhile goes to `on_output`."""
    chunks: list[Any] = []
    ex = WasmExecutor(limits=Limits(timeout_s=10), on_output=chunks.append)
    try:
        run = agent(ex, "for i in range(100):\n    print(f'row {i}')\nfinal_answer('ok')")
        assert run.run("go") == "answer: ok"
    finally:
        ex.cleanup()
    assert "".join(c.text for c in chunks) == "".join(f"row {i}\n" for i in range(100))
    assert {c.call_id for c in chunks} == {"step"}
