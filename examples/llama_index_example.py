"""LlamaIndex with code mode: an agent's tools behind one `run_python` tool.

    python examples/llama_index_example.py

Offline, LlamaIndex's scripted `MockFunctionCallingLLM` plays the assistant; with
OPENAI_API_KEY set (and `pip install llama-index-llms-openai`), a real model does (OPENAI_MODEL
picks which). Either way the store's tools run for real: every call the code makes shows in the
run's event stream as a `ToolCall` and its `ToolCallResult`, and the follow-up question, asked
with the same workflow `Context`, uses variables the first answer's code left behind.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from llama_index.core.agent.workflow import FunctionAgent, ToolCall, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.workflow import Context
from store_question import FIRST_CODE, FOLLOW_UP, QUESTION, SECOND_CODE, TOOLS
from tooliscode.integrations.llama_index import as_llama_index_tool

CODES = [FIRST_CODE, SECOND_CODE]


def scripted(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
    """Writes the prepared code for each question, then answers with what it printed."""
    if messages[-1].role == "tool":
        return ChatMessage(role="assistant",
                           content=f"Here is what I found: {messages[-1].content}")
    return ChatMessage(role="assistant", blocks=[ToolCallBlock(
        tool_call_id=f"call-{len(CODES)}", tool_name="run_python",
        tool_kwargs={"code": CODES.pop(0)})])


def model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        from llama_index.llms.openai import OpenAI  # needs `pip install llama-index-llms-openai`

        return OpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
    return MockFunctionCallingLLM(response_generator=scripted)


async def main() -> None:
    # --8<-- [start:change]
    code = as_llama_index_tool(TOOLS)  # the one-line change: tools=[code] instead of tools=TOOLS
    agent = FunctionAgent(tools=[code], llm=model(),
                          system_prompt="Answer questions about the store.")
    # --8<-- [end:change]
    ctx = Context(agent)  # one conversation: its interpreter is keyed by this context
    try:
        for question in (QUESTION, FOLLOW_UP):
            print(f"\n=== user: {question}")
            handler = agent.run(question, ctx=ctx)
            async for event in handler.stream_events():
                if isinstance(event, ToolCall) and event.tool_name == "run_python":
                    print(f"--- the model's code ---\n{event.tool_kwargs['code']}")
                elif isinstance(event, ToolCall) and not isinstance(event, ToolCallResult):
                    print(f"  event: {event.tool_name}({event.tool_kwargs}) as {event.tool_id}")
                elif isinstance(event, ToolCallResult) and event.tool_name == "run_python":
                    print(f"--- what it read back ---\n{event.tool_output.content}")
            print(f"=== assistant: {await handler}")
    finally:
        code.close()


if __name__ == "__main__":
    asyncio.run(main())
