"""A scripted PydanticAI model for the adapter's tests (a `FunctionModel` over a list of code
cells), shared by their test files and the processes they start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

ANSWER = object()
"""In a `Script`: answer with the last tool result here (the run ends)."""


class Script:
    """A FunctionModel that sends the given code calls in turn and answers with the last tool
    result at each `ANSWER` and at the end; it records what the model was shown."""

    def __init__(self, *steps: Any):
        self.steps = list(steps)
        self.infos: list[AgentInfo] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.infos.append(info)
        step = self.steps.pop(0) if self.steps else ANSWER
        if step is not ANSWER:
            return ModelResponse(parts=[ToolCallPart("run_python", {"code": step})])
        last = messages[-1].parts[-1]
        return ModelResponse(parts=[TextPart(f"answer: {getattr(last, 'content', '')}")])

    async def stream(self, messages: list[ModelMessage],
                     info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        """The same steps, for streamed runs (`run_stream_events`)."""
        for part in self(messages, info).parts:
            if isinstance(part, ToolCallPart):
                yield {0: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                        tool_call_id=part.tool_call_id)}
            else:
                yield getattr(part, "content", "")

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self, stream_function=self.stream)


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, ToolReturnPart)]
