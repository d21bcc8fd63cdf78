"""Text mode: code read out of plain replies, run in the sandbox, the output sent back."""

from __future__ import annotations

import asyncio

import openai
import pytest
from tooliscode import ToolError, ToolIsCode
from tooliscode.openai._text_mode import TextMode, extract_code, parse_reply, strip_think
from tooliscode.openai.testing import ScriptedServer, say


def stock(sku: str) -> int:
    """Units in stock of one product."""
    if sku == "gone":
        raise ToolError("no such product: gone")
    return {"a": 3, "b": 5}[sku]


async def astock(sku: str) -> int:
    """Units in stock, asked asynchronously."""
    await asyncio.sleep(0)
    return {"a": 3, "b": 5}[sku]


@pytest.mark.parametrize("reply, cells", [
    ("Sure.\n```python\nx = 1\n```\nThen:\n```py\nprint(x)\n```", ["x = 1", "print(x)"]),
    ("```python3\nprint(1)\n```", ["print(1)"]),
    ("```Python title='a.py'\nprint(1)\n```", ["print(1)"]),
    ("~~~python\nprint(1)\n~~~", ["print(1)"]),
    ("```python\r\nif True:\r\n    print(1)\r\n```\r\n", ["if True:\n    print(1)"]),
    ("1. First:\n   ```python\n   for i in range(2):\n       print(i)\n   ```\n2. Done",
     ["for i in range(2):\n    print(i)"]),
    ("````python\ns = '''\n```\n'''\n````", ["s = '''\n```\n'''"]),
    ("```python\nprint('stopped before the fence')", ["print('stopped before the fence')"]),
    ("```\nprint('bare fence, but code')\n```", ["print('bare fence, but code')"]),
    ("```\n{\"a\": 1, \"b\": [2, 3]}\n```", []),       # data in a bare fence is not code
    ("```json\n{\"a\": 1}\n```\n```bash\nls\n```", []),
    ("```text\nprint(1)\n```", []),
    ("Use `print(1)` inline.", []),
    ("```python\n\n```", []),
    ("<execute>\nprint(3)\n</execute>", ["print(3)"]),
    ("<code>print(4)</code>", ["print(4)"]),
])
def test_extract_code(reply, cells):
    assert extract_code(reply) == cells


@pytest.mark.parametrize("reply, reasoning, cells, prose", [
    ("<think>maybe ```python\nwrong()\n```</think>\nI'll look.\n```python\nright()\n```",
     "maybe ```python\nwrong()\n```", ["right()"], "I'll look."),
    ("<think>still going ```python\nwrong()\n```", "still going ```python\nwrong()\n```", [], ""),
    # templates that open the section in the prompt: the reply only closes it
    ("so I call it\n</think>\n\n```python\nright()\n```", "so I call it", ["right()"], ""),
    ("<THINKING>a</THINKING>b<think>c</think>d", "a\n\nc", [], "bd"),
    ("No code, just the answer: 42.", "", [], "No code, just the answer: 42."),
])
def test_reasoning_sections_are_never_code(reply, reasoning, cells, prose):
    parsed = parse_reply(reply)
    assert (parsed.reasoning, parsed.cells, parsed.prose) == (reasoning, cells, prose)
    assert "<think>" not in strip_think(reply).lower()


@pytest.mark.parametrize("runtime, python", [("default", "Python 3.14"),
                                              ("data", "Python 3.15 with numpy")])
def test_the_instructions_name_the_sandbox_python(runtime, python):
    with TextMode([stock], runtime=runtime) as tm:  # no guest starts: only the prompt is read
        assert tm.instructions.startswith(f"You can run code in {python}")


def test_step_runs_the_blocks_in_one_session_and_says_what_to_send_back():
    with TextMode([stock]) as tm:
        assert "```python" in tm.instructions and "def stock(sku: str) -> int:" in tm.instructions
        first = tm.step("<think>count a</think>Checking.\n```python\nn = stock('a')\nprint(n)\n```")
        assert not first.done and first.message == "3"
        assert first.results[0].tool_calls[0].arguments == {"sku": "a"}

        second = tm.step("```python\nprint(n + stock('b'))\n```\n```python\nstock('gone')\n```\n"
                         "```python\nprint('never')\n```")
        assert not second.done and len(second.outputs) == 2
        assert second.message.startswith("[output of block 1 of 3]\n8\n\n"
                                         "[output of block 2 of 3]\n[error]")
        assert "ToolError: no such product: gone" in second.message
        assert second.message.endswith("[block 3 did not run: block 2 failed]")
        assert "never" not in second.message

        final = tm.step("The total is 8.")
        assert final.done and final.message is None and final.answer == "The total is 8."
        assert final.outputs == []


def test_final_answer_ends_the_turn_with_its_value():
    with TextMode([stock]) as tm:
        turn = tm.step("```python\nfinal_answer({'a': stock('a')})\n```")
        assert turn.done and turn.has_final and turn.answer == {"a": 3}


def test_keys_keep_conversations_apart_and_a_shared_toolset_stays_open():
    with ToolIsCode([stock]) as tic:
        tm = TextMode(toolset=tic)
        tm.step("```python\nx = 'one'\n```", key="c1")
        assert tm.step("```python\nprint(x)\n```", key="c1").message == "one"
        assert "NameError" in tm.step("```python\nprint(x)\n```", key="c2").message
        tm.close()
        assert set(tic.keys) == {"c1", "c2"}   # not closed: the caller owns the toolset
    with pytest.raises(ValueError, match="either toolset"):
        TextMode([stock], toolset=tic)


async def test_astep_runs_async_tools_on_the_running_loop():
    with TextMode([astock]) as tm:
        turn = await tm.astep("```python\nimport asyncio\n"
                              "print(sum(await asyncio.gather(astock('a'), astock('b'))))\n```")
        assert turn.message == "8"


def test_a_custom_loop_with_a_model_that_cannot_call_tools():
    """The README's loop, with the real openai client and a model that only writes text."""
    script = [say("<think>I need both counts.</think>\n```python\n"
                  "print(sum(stock(s) for s in ['a', 'b']))\n```"),
              say("There are 8 units in stock.")]
    with TextMode([stock]) as tm, ScriptedServer(script) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        messages = [{"role": "system", "content": tm.instructions},
                    {"role": "user", "content": "How many units of a and b?"}]
        while True:
            reply = client.chat.completions.create(model="m", messages=messages)
            text = reply.choices[0].message.content
            messages.append({"role": "assistant", "content": text})
            turn = tm.step(text)
            if turn.done:
                break
            messages.append({"role": "user", "content": turn.message})
        assert turn.answer == "There are 8 units in stock."
        sent = server.requests[1].body["messages"]
        assert sent[-1] == {"role": "user", "content": "8"}
        assert "tools" not in server.requests[0].body
