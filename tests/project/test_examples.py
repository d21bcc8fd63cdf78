"""The framework examples run offline as the README says, and their answers are right.

Each example runs as its own `__main__`, as `python examples/X.py` would run it (no
OPENAI_API_KEY, the examples folder first on the path), and what it prints is checked against
answers worked out here from the example's own data. It runs in this process: a new one would
import its framework again, which costs more than the example itself. CrewAI's runs in its own
environment, as a user's would.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import runpy
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[2]


_KEYS = ("OPENAI_API_KEY", "GOOGLE_API_KEY")


def run_example(name: str, python: str | None = None) -> str:
    """What the example prints: in this process, or with `python` in a process of its own."""
    script = ROOT / "examples" / f"{name}.py"
    if python is not None:
        env = {k: v for k, v in os.environ.items() if k not in _KEYS}
        done = subprocess.run([python, str(script)], env=env, capture_output=True, text=True,
                              timeout=300, cwd=ROOT, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout
    out = io.StringIO()
    saved = {k: os.environ.pop(k) for k in _KEYS if k in os.environ}
    path, cwd = list(sys.path), os.getcwd()
    try:
        sys.path.insert(0, str(script.parent))
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exit_:
        assert exit_.code in (0, None), out.getvalue()[-3000:]
    finally:
        sys.path[:], _ = path, os.chdir(cwd)
        os.environ.update(saved)
    return out.getvalue()


def load(name: str) -> ModuleType:
    """The example's module (its data), imported without running it."""
    spec = importlib.util.spec_from_file_location(f"example_{name}",
                                                  ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_openai_example() -> None:
    """Your own Responses loop, then run_conversation, each answering from one cell."""
    out, ex = run_example("openai_example"), load("openai_example")
    paid: Counter[str] = Counter()
    for order in ex.ORDERS:
        if order["status"] == "paid":
            paid[order["customer"]] += order["total"]
    best, total = paid.most_common(1)[0]
    line = f"{ex.get_customer(best)} {round(total, 2)}"
    own, shipped = out.split("=== run_conversation")
    assert own.count("--- the model's code ---") == 1 and f"--- it read ---\n{line}" in own
    assert f"=== your own loop\nThe top payer: {line}" in own
    assert shipped == f", 2 model calls\nThe top payer: {line}\n"


def test_pydantic_ai_example() -> None:
    out, ex = run_example("pydantic_ai_example"), load("pydantic_ai_example")
    for category in ("kitchen", "toys"):
        pricey = [p for p in ex.PRODUCTS if p["category"] == category and p["price"] > 250]
        low = [p for p in pricey if (int(p["sku"][4:]) * 37 + len("Lyon")) % 60 < 15]
        assert f"{category}: {len(low)} of {len(pricey)} to reorder at Lyon" in out
    assert "skipped: unknown category 'gadgets'" in out
    # one code call, whose code made two listings and one stock call per pricey product
    calls = 2 + sum(p["category"] in ("kitchen", "toys") and p["price"] > 250
                    for p in ex.PRODUCTS)
    assert f"the code made {calls + 1} tool calls, 1 failed" in out
    assert "usage: 2 model requests" in out


def test_pydantic_ai_approval_example() -> None:
    out, ex = run_example("pydantic_ai_approval_example"), load("pydantic_ai_approval_example")
    late = [o for o in ex.ORDERS if o["shipped"] is None and o["due"] < "2024-05-10"]
    decided = [(o["customer"], str(n), "rejected" if o["customer"].startswith("bob")
                else "approved") for n, o in enumerate(late, start=2)]
    printed = [f"{o['id']} not sent: Bob was called instead" if o["customer"].startswith("bob")
               else f"{o['id']} sent to {o['customer']}" for o in late]
    sent = sum(not o["customer"].startswith("bob") for o in late)
    in_process, restored = out.split("=== from serialized state")
    for part in (in_process, restored):
        assert part.count("--- the run paused") == 1  # the emails were gathered: one pause
        assert re.findall(r"send_email\(to='(\S+)'\) id=\S+:(\d+): (\w+)", part) == decided
        assert "=== assistant: Done:\n" + "\n".join(printed) + "\n" in part
        assert f"tools: {{'orders looked up': 1, 'emails sent': {sent}}}" in part


def test_langchain_example() -> None:
    out, ex = run_example("langchain_example"), load("langchain_example")
    urgent = Counter(t["customer"] for t in ex.TICKETS
                     if t["status"] == "open" and t["priority"] == "high").most_common(3)
    plans = {c: ("enterprise", "team", "team")[int(c[1:]) % 3] for c, _ in urgent}
    first, second = out.split("=== user: ")[1:]
    for customer, count in urgent:
        assert f"Customer {customer[1:]} ({plans[customer]}): {count} tickets" in first
    assert first.count("child run get_customer(") == 3
    assert first.count("child run list_tickets(") == 1
    enterprise = [f"Customer {c[1:]}" for c, _ in urgent if plans[c] == "enterprise"]
    assert f"=== assistant: Here is what I found:\n{enterprise}" in second  # state kept


def test_langchain_approval_example() -> None:
    out, ex = run_example("langchain_approval_example"), load("langchain_approval_example")
    late = [o for o in ex.ORDERS if o["shipped"] is None and o["due"] < ex.TODAY]
    assert len(late) == 2
    _, first, second = re.split(r"\n=== \d\. ", out)
    for part in (first, second):  # in this process, then a new graph from saved state
        assert "--- paused: the code waits for 2 emails to be reviewed ---" in part
        for order in late:
            assert f"send_email(to={order['email']!r}, subject='Order {order['id']} is late')" \
                in part
        assert f"approve {late[0]['email']}" in part and f"reject {late[1]['email']}" in part
        assert f"{late[0]['customer']} -> sent to {late[0]['email']}" in part
        assert (f"{late[1]['customer']} -> not sent: User rejected the tool call for "
                "`send_email` with reason: they phoned support this morning") in part
        # the orders were looked up once, and only the approved email went out, once
        assert f"tool runs: {{'find_late_orders': 1, 'send_email': 1}}; outbox: " \
            f"[{late[0]['email']!r}]" in part
    assert "the new graph finds 1 pending interrupt with 2 emails" in second


def test_openai_agents_approval_example() -> None:
    """Each email pauses the cell; the person approves Ann's here, rejects Bob's in a new
    process resumed from the run's JSON, and approves Eve's there: each email is sent once,
    by the process that approved it."""
    # Its own process: it starts another for the resume, from itself as a script.
    out = run_example("openai_agents_approval_example", sys.executable)
    ex = load("openai_agents_approval_example")
    first, second = out.split("=== the paused run, as JSON, goes to a new process")
    late = [o["customer"] for o in ex.ORDERS if not o["shipped"] and o["due"] < ex.TODAY]
    assert late == ["ann@example.com", "bob@example.com", "eve@example.com"]
    assert first.count("paused: send_email(") == 2 and "call call_1:2" in first
    assert "emails sent by this process: ['ann@example.com']" in first
    assert "restored 1 pending approval(s)" in second
    assert "rejects send_email to bob@example.com (call_1:3)" in second
    assert "emails sent by this process: ['eve@example.com']" in second
    assert out.split("--- final answer ---\n", 1)[1].splitlines()[1:] == [
        "emailed ann@example.com",
        "did not email bob@example.com: Bob asked us not to email him",
        "emailed eve@example.com"]


def test_openai_agents_example() -> None:
    # Its own process: the Agents SDK's trace processors are process-wide.
    out, ex = run_example("openai_agents_example", sys.executable), load("openai_agents_example")
    paid: Counter[str] = Counter()
    for order in ex.ORDERS:
        if order["status"] == "paid":
            paid[order["customer"]] += order["total"]
    answer = out.split("--- final answer ---\n", 1)[1]
    for customer, total in paid.most_common(3):
        tier = "gold" if customer in ("c4", "c8") else "silver"
        assert f"Customer {customer[1:]} ({tier}): {total:,.2f}" in answer
    spans = re.findall(r"function span '(\w+)' inside '(\w+)'", out)
    inner = sorted(span for span in spans if span[0] != "run_python")
    assert inner == [("get_customer", "run_python")] * 3 + [("list_orders", "run_python")]
    assert sum(name == "run_python" for name, _ in spans) == 1


def test_mcp_example() -> None:
    out = run_example("mcp_example")
    assert "commits by author: {'Ada': 3, 'Grace': 2, 'Linus': 1}" in out
    found = re.search(r"Tokyo: (\d\d:\d\d) (\w+) \| New York: (\d\d:\d\d)", out)
    assert found, out
    moments = [datetime.now(ZoneInfo("UTC")) - timedelta(minutes=m) for m in range(4)]
    tokyo = {t.astimezone(ZoneInfo("Asia/Tokyo")).strftime("%H:%M %A") for t in moments}
    new_york = {t.astimezone(ZoneInfo("America/New_York")).strftime("%H:%M") for t in moments}
    assert f"{found[1]} {found[2]}" in tokyo and found[3] in new_york, (found[0], tokyo)


def check_store_answers(out: str, marker: str, inner: str) -> None:
    """The two answers of an example over examples/store_question.py (the question's, and the
    follow-up's, whose code used variables the first answer's code left behind), and the
    first answer's five inner calls as the framework reported them (`inner` matches one)."""
    if str(ROOT / "examples") not in sys.path:  # store_question imports store_tools
        sys.path.insert(0, str(ROOT / "examples"))
    first, second = load("store_question").expected_lines()
    answers = re.findall(rf"^=== {marker}: (.*)$", out, re.MULTILINE)
    assert answers == [f"Here is what I found: {first}", f"Here is what I found: {second}"], out
    assert sorted(re.findall(inner, out, re.MULTILINE)) == [
        "get_account_manager", "get_exchange_rate", "list_customers", "list_orders",
        "list_tickets"], out


def test_google_adk_example() -> None:
    check_store_answers(run_example("google_adk_example"), "assistant", r"^  callback: (\w+)\(")


def test_llama_index_example() -> None:
    check_store_answers(run_example("llama_index_example"), "assistant",
                        r"^  event: (\w+)\(.* as run_python:\d+$")


def test_crewai_example() -> None:
    """Run with CrewAI's own environment, which `make setup` makes (see the README)."""
    python = ROOT / ".venv-crewai" / "bin" / "python"
    assert python.exists(), "CrewAI's environment is missing: run `make setup`"
    check_store_answers(run_example("crewai_example", str(python)), "crew",
                        r"^  hook: (\w+)\(.* in the task 'Which EU")


def _demo_answer() -> dict:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from demo import expected_answer
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return expected_answer()


def test_agent_framework_example() -> None:
    out = run_example("agent_framework_example")
    assert out.count("--- the model's code ---") == 3
    expected = _demo_answer()
    assert f"[final answer] {expected!r}" in out.split("=== assistant: ", 1)[1]
    assert "45 tools behind execute_code; 1 interpreter kept" in out
    assert "answer check against a direct computation: correct" in out


def test_smolagents_example() -> None:
    out, expected = run_example("smolagents_example"), _demo_answer()
    assert out.count("the model's code ---") == 3
    assert (f"Execution logs:\n{expected['customer']} ({expected['customer_id']}): "
            f"{expected['total_usd']:,.2f} USD; manager {expected['account_manager']}; "
            f"{expected['open_tickets']} open tickets") in out  # step 2 read its own print
    answer = out.split("=== final answer ===\n", 1)[1].splitlines()[0]
    assert json.loads(answer) == expected
    assert "answer check against a direct computation: correct" in out


def test_dspy_react_example() -> None:
    if str(ROOT / "examples") not in sys.path:  # store_question imports store_tools
        sys.path.insert(0, str(ROOT / "examples"))
    first, second = load("store_question").expected_lines()
    out = run_example("dspy_react_example")
    read_back = re.findall(r"^--- what it read back ---\n(.*)$", out, re.MULTILINE)
    assert read_back == [first, second], out  # the follow-up's code used the first's variables


def test_dspy_interpreter_example() -> None:
    if str(ROOT / "examples") not in sys.path:
        sys.path.insert(0, str(ROOT / "examples"))
    first, second = load("store_question").expected_lines()
    out = run_example("dspy_interpreter_example")
    name = first.split(" (", 1)[0]
    assert f"--- what it read back ---\n{first}\n" in out, out
    assert out.rstrip().endswith(f"=== answer: {name}: {second} were theirs"), out
