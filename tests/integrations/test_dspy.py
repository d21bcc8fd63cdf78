"""DSPy adapter: real `dspy.ReAct`, `dspy.RLM`, `dspy.CodeAct` and `dspy.ProgramOfThought`
runs, scripted with DSPy's own `DummyLM`: code mode for ReAct's tools, and the sandbox as the
`CodeInterpreter` the other three run their code through."""

from __future__ import annotations

import pytest

dspy = pytest.importorskip("dspy")

from _shop import refund
from dspy.primitives.code_interpreter import (
    CodeExecutionError,
    CodeInterpreter,
    CodeInterpreterError,
    FinalOutput,
)
from dspy.utils import DummyLM
from tooliscode import Limits
from tooliscode.integrations.dspy import SandboxInterpreter, as_dspy_tool

ORDERS = [{"id": i, "customer": f"c{i % 3}", "total": i * 10} for i in range(1, 7)]
CALLED: list[str] = []


def list_orders(customer: str | None = None) -> list[dict]:
    """Every order, or one customer's."""
    CALLED.append(f"list_orders:{customer}")
    return [o for o in ORDERS if customer in (None, o["customer"])]


def step(code: str, thought: str = "in code") -> dict:
    """A ReAct step that runs `code` through the code tool."""
    return {"next_thought": thought, "next_tool_name": "run_python",
            "next_tool_args": {"code": code}}


FINISH = {"next_thought": "done", "next_tool_name": "finish", "next_tool_args": {}}


@pytest.fixture(autouse=True)
def _calls():
    CALLED.clear()


def test_react_runs_code_over_its_tools_and_keeps_state_within_a_run():
    code = as_dspy_tool([list_orders, dspy.Tool(refund)], limits=Limits(timeout_s=30))
    react = dspy.ReAct("question -> answer", tools=[code])
    script = [step("mine = list_orders(customer='c1')\nprint(len(mine))"),
              step("try:\n    refund(order_id=-1)\nexcept ToolError as e:\n    print('no:', e)\n"
                   "print(refund(order_id=mine[0]['id']))"),
              FINISH, {"reasoning": "read it", "answer": "refunded 1"}]
    try:
        with dspy.context(lm=DummyLM(script)):
            out = react(question="Refund c1's first order.")
    finally:
        code.close()
    assert out.answer == "refunded 1"
    assert out.trajectory["observation_0"] == "2"
    assert out.trajectory["observation_1"].splitlines() == [
        "no: ValueError: order -1 does not exist", "refunded 1"]
    assert CALLED == ["list_orders:c1"]
    assert react.tools.keys() == {"run_python", "finish"}
    assert "def list_orders(customer: str | None = None) -> list[dict]" in code.desc


def test_a_failing_cell_is_readback_not_a_failed_run():
    code = as_dspy_tool([list_orders])
    react = dspy.ReAct("question -> answer", tools=[code])
    try:
        with dspy.context(lm=DummyLM([step("1 / 0"), FINISH,
                                      {"reasoning": "r", "answer": "a"}])):
            out = react(question="?")
    finally:
        code.close()
    assert "ZeroDivisionError" in out.trajectory["observation_0"]


@pytest.mark.parametrize("as_given", ["tool", "callable"])
def test_defaults_are_the_frameworks_when_code_gives_only_what_is_required(as_given):
    from _defaults import CODE, ONLY_REQUIRED, post, same_as_direct

    code = as_dspy_tool([dspy.Tool(post) if as_given == "tool" else post])
    try:  # ReAct calls the model's choice as `tool(**arguments)`
        same_as_direct(lambda: dspy.Tool(post)(**ONLY_REQUIRED), lambda: code(code=CODE))
    finally:
        code.close()


def test_callers_keep_a_tool_for_react_itself():
    code = as_dspy_tool([list_orders, refund], callers={"refund": "direct"})
    try:
        assert [t.name for t in code.direct_tools] == ["refund"]
        assert "NameError" in code(code="refund(order_id=1)")
    finally:
        code.close()


# -- the sandbox as the CodeInterpreter ---------------------------------------------------


def test_the_interpreter_protocol():
    calls: list[int] = []

    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    interpreter = SandboxInterpreter(tools={"double": double})
    assert isinstance(interpreter, CodeInterpreter)
    interpreter.start()
    interpreter.start()  # idempotent
    assert interpreter.execute("a = double(x=21)\nprint(a)") == "42\n"
    assert interpreter.execute("a + n", variables={"n": 1}) == "43"  # state kept
    with pytest.raises(SyntaxError):
        interpreter.execute("def (:")
    with pytest.raises(SyntaxError):  # an IndentationError is one too
        interpreter.execute("  x = 1")
    with pytest.raises(CodeExecutionError, match="KeyError"):
        interpreter.execute("{}['missing']")
    assert interpreter.execute("SUBMIT(a)") == FinalOutput({"output": 42})
    interpreter.output_fields = [{"name": "answer"}, {"name": "score", "type": "int"}]
    interpreter._tools_registered = False  # as RLM does when it sets the fields
    assert interpreter.execute("SUBMIT(answer='x', score=a)") == FinalOutput(
        {"answer": "x", "score": 42})
    interpreter.shutdown()
    with pytest.raises(CodeInterpreterError, match="shut down"):
        interpreter.execute("1")
    assert calls == [21]


def test_program_of_thought_runs_its_code_here_and_retries_a_failure():
    pot = dspy.ProgramOfThought("question -> answer", interpreter_factory=SandboxInterpreter)
    script = [{"reasoning": "r", "generated_code": "```python\nx = undefined_name\n```"},
              {"reasoning": "fix",
               "generated_code": "```python\nx = sum(range(10))\nSUBMIT(x)\n```"},
              {"reasoning": "read", "answer": "45"}]
    with dspy.context(lm=DummyLM(script)):
        out = pot(question="What is 0 + 1 + ... + 9?")
    assert out.answer == "45"


def factorial(n: int) -> int:
    """The factorial of n (CodeAct defines its tools in the interpreter from their source)."""
    out = 1
    for i in range(2, n + 1):
        out *= i
    return out


def test_code_act_defines_its_tools_in_the_sandbox():
    act = dspy.CodeAct("n -> answer", tools=[factorial], max_iters=3,
                       interpreter_factory=SandboxInterpreter)
    script = [{"reasoning": "r", "generated_code": "```python\nprint(factorial(n=5))\n```",
               "finished": True}, {"reasoning": "read", "answer": "120"}]
    with dspy.context(lm=DummyLM(script)):
        out = act(n=5)
    assert out.trajectory.get("code_output_0") == '"120\\n"', out.trajectory
    assert out.answer == "120"


def test_rlm_calls_host_tools_and_the_sub_lm_and_submits_typed_fields():
    rlm = dspy.RLM("customer, query -> answer, count: int", tools=[list_orders], max_iters=3,
                   sub_lm=DummyLM([{"answer": "a summary"}]))
    script = [{"reasoning": "look", "code": "```python\nmine = list_orders(customer=customer)\n"
                                             "print(len(mine), llm_query(prompt='sum up'))\n```"},
              {"reasoning": "submit", "code": "```python\nSUBMIT(answer=str(sum(o['total'] for "
                                               "o in mine)), count=len(mine))\n```"}]
    with dspy.context(lm=DummyLM(script), interpreter_factory=SandboxInterpreter):
        out = rlm(customer="c2", query="How much did c2 spend?")
    assert (out.answer, out.count) == ("70", 2)  # c2's orders: 2 and 5
    first = out.trajectory[0]["output"]
    assert first.startswith("2 ") and "a summary" in first  # variables kept across steps
    assert CALLED == ["list_orders:c2"]


def test_on_output_gets_what_the_code_prints_as_it_runs():
    """DSPy's stream shows a tool's progress only at its start and end (`streamify`'s status
    messages): what the code prints goes to `on_output`."""
    chunks: list = []
    code = as_dspy_tool([list_orders], limits=Limits(timeout_s=30), on_output=chunks.append)
    react = dspy.ReAct("question -> answer", tools=[code])
    script = [step("for i in range(50):\n    print(f'row {i}')"), FINISH,
              {"reasoning": "read it", "answer": "done"}]
    try:
        with dspy.context(lm=DummyLM(script)):
            assert react(question="go").answer == "done"
    finally:
        code.close()
    assert "".join(c.text for c in chunks) == "".join(f"row {i}\n" for i in range(50))
