"""The raw OpenAI APIs: `ToolIsCode`, parsing and rendering tool calls for both APIs, the
conversation loop, streaming, text mode, and (in `testing`) a scripted OpenAI-compatible
server."""

from ._callback import LLM, LLM_TOOL_NAME
from ._loop import (
    LoopResult,
    MaxIterationsExceeded,
    arun_batch,
    arun_conversation,
    llm_from_client,
    run_batch,
    run_conversation,
)
from ._streaming import PartialCall, ToolCallAccumulator, partial_code
from ._text_mode import ParsedReply, TextMode, TextTurn, extract_code, parse_reply, strip_think
from ._tool_call import CodeCall, parse_call
from ._toolset import ToolIsCode, ToolOutput

__all__ = ["LLM", "LLM_TOOL_NAME", "CodeCall", "LoopResult", "MaxIterationsExceeded",
           "ParsedReply", "PartialCall", "TextMode", "TextTurn", "ToolCallAccumulator",
           "ToolIsCode", "ToolOutput", "arun_batch", "arun_conversation", "extract_code",
           "llm_from_client", "parse_call",
           "parse_reply", "partial_code", "run_batch", "run_conversation", "strip_think"]
