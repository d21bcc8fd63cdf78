"""Google ADK with code mode: an agent's tools behind one `run_python` tool.

    python examples/google_adk_example.py

Offline, a scripted `BaseLlm` plays the assistant; with GOOGLE_API_KEY set, Gemini does
(GOOGLE_MODEL picks which). Either way the store's tools run for real, as ADK runs tools: the
agent's `before_tool_callback` sees every call the code makes, and the follow-up question, asked
in the same ADK session, uses variables the first answer's code left behind.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from store_question import FIRST_CODE, FOLLOW_UP, QUESTION, SECOND_CODE, TOOLS
from tooliscode.integrations.google_adk import CodeModeToolset


class ScriptedModel(BaseLlm):
    """Writes the prepared code for each question, then answers with what it printed."""

    model: str = "scripted"
    codes: list[str] = [FIRST_CODE, SECOND_CODE]

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
        part = llm_request.contents[-1].parts[0]
        if part.function_response is not None:
            said = part.function_response.response.get("result")
            reply = types.Part(text=f"Here is what I found: {said}")
        else:
            reply = types.Part(function_call=types.FunctionCall(
                name="run_python", args={"code": self.codes.pop(0)}))
        yield LlmResponse(content=types.Content(role="model", parts=[reply]))


def model() -> Any:
    if os.environ.get("GOOGLE_API_KEY"):
        return os.environ.get("GOOGLE_MODEL", "gemini-2.5-flash")
    return ScriptedModel()


def show_call(tool: Any, args: dict[str, Any], tool_context: Any) -> None:
    """The agent's own callback: it sees the code tool's call and each call its code makes."""
    if tool.name != "run_python":
        print(f"  callback: {tool.name}({args}) as call {tool_context.function_call_id}")


async def main() -> None:
    # --8<-- [start:change]
    code = CodeModeToolset(TOOLS)  # the one-line change: tools=[code] instead of tools=TOOLS
    agent = LlmAgent(name="store_analyst", model=model(), tools=[code],
                     instruction="Answer questions about the store.",
                     before_tool_callback=show_call)
    # --8<-- [end:change]
    runner = InMemoryRunner(agent=agent, app_name="store")
    session = await runner.session_service.create_session(app_name="store", user_id="ada")
    try:
        for question in (QUESTION, FOLLOW_UP):
            print(f"\n=== user: {question}")
            message = types.Content(role="user", parts=[types.Part(text=question)])
            async for event in runner.run_async(user_id="ada", session_id=session.id,
                                                new_message=message):
                for call in event.get_function_calls():
                    print(f"--- the model's code ---\n{call.args['code']}")
                for response in event.get_function_responses():
                    print(f"--- what it read back ---\n{response.response}")
                if event.is_final_response() and event.content and event.content.parts:
                    print(f"=== assistant: {event.content.parts[0].text}")
    finally:
        await runner.close()


if __name__ == "__main__":
    asyncio.run(main())
