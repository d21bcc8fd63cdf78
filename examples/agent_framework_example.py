"""Microsoft Agent Framework with code mode: a store's 45 tools behind one `execute_code` tool.

    python examples/agent_framework_example.py

`CodeActProvider` is a context provider, like the framework's own Hyperlight and Monty CodeAct
providers: before every run it gives the agent one `execute_code` tool and instructions with
the catalog of the tools registered on it. The tools run for real, on the host, with a
`FunctionInvocationContext` of the run. Offline, a scripted chat client (the framework's
`FunctionInvocationLayer` over `BaseChatClient`) writes the same code as `make demo`'s
scripted model; with OPENAI_API_KEY set and `agent-framework-openai` installed, a real model
does (OPENAI_MODEL picks which).
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import sys
from collections.abc import Mapping, MutableSequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import store_tools as store
from agent_framework import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    FunctionTool,
    Message,
)
from demo import CELLS, PROMPT, expected_answer
from tooliscode.integrations.agent_framework import CodeActProvider


def dict_tool(spec: dict[str, Any]) -> FunctionTool:
    """One of the store's OpenAI function-tool dicts as a framework tool run by its callback."""
    name = spec["name"]
    return FunctionTool(name=name, description=spec["description"],
                        input_model=spec["parameters"],
                        func=lambda **args: store.callback("agent-framework", name, args))


TOOLS = [*store.FUNCTIONS, *(dict_tool(spec) for spec in store.DICT_TOOLS)]


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """The offline model: one prepared cell per turn, then it repeats what the code found."""

    def __init__(self) -> None:
        FunctionInvocationLayer.__init__(self)
        BaseChatClient.__init__(self)
        self.turn = 0

    def _inner_get_response(self, *, messages: MutableSequence[Message], stream: bool,
                            options: Mapping[str, Any], **kwargs: Any) -> Any:
        async def respond() -> ChatResponse:
            self.turn += 1
            if self.turn <= len(CELLS):
                call = Content.from_function_call(call_id=f"call-{self.turn}", name="execute_code",
                                                  arguments={"code": CELLS[self.turn - 1]})
                return ChatResponse(messages=Message(role="assistant", contents=[call]))
            found = [c for c in messages[-1].contents if c.type == "function_result"]
            return ChatResponse(messages=Message(role="assistant", contents=[
                f"Here is what I found:\n{found[-1].result}"]))
        return respond()


def client() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from agent_framework.openai import OpenAIChatClient
            return OpenAIChatClient(model_id=os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
        except ModuleNotFoundError:
            print("(agent-framework-openai is not installed: using the scripted model)")
    return ScriptedClient()


async def main() -> int:
    # --8<-- [start:provider]
    codeact = CodeActProvider(tools=TOOLS)
    # --8<-- [end:provider]
    try:
        # --8<-- [start:agent]
        agent = Agent(client=client(), instructions="You answer questions about the store.",
                      context_providers=[codeact])  # the one-line change
        # --8<-- [end:agent]
        session = AgentSession()
        result = await agent.run(PROMPT, session=session)
        for message in result.messages:
            for content in message.contents:
                if content.type == "function_call":
                    print(f"--- the model's code ---\n{content.parse_arguments()['code']}")
                elif content.type == "function_result":
                    print(f"--- what it read back ---\n{content.result}")
        print(f"=== assistant: {result.text}")
        kept = codeact.live()
        print(f"{len(codeact.get_tools())} tools behind execute_code; {len(kept)} interpreter "
              f"kept, for session {kept[0] == session.session_id and session.session_id}")
    finally:
        codeact.close()
    if isinstance(agent.client, ScriptedClient):
        line = next(t for t in result.text.splitlines() if t.startswith("[final answer] "))
        ok = ast.literal_eval(line.removeprefix("[final answer] ")) == expected_answer()
        print(f"answer check against a direct computation: {'correct' if ok else 'WRONG'}")
        print(json.dumps(expected_answer()))
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
