"""What the model reads: the code tool's guide, the tool catalog, how results read back,
and token counting. `render` is the one place that decides what a result reads as."""

from ._catalog import catalog
from ._guide import (
    CODE_TOOL_NAME,
    CODE_TOOL_SCHEMA,
    FIGURES_NOTE,
    LLM_QUERY_NOTE,
    code_tool_description,
    instructions,
    with_catalog,
)
from ._images import base64_data, data_url, images_line, responses_output
from ._render import EVICTED, REPLACED, failed_to_run, not_run, note, noted, render
from ._tokens import TOKENIZER, ContextCounter, count_tokens, item_text

__all__ = ["CODE_TOOL_NAME", "CODE_TOOL_SCHEMA", "EVICTED", "FIGURES_NOTE", "LLM_QUERY_NOTE",
           "REPLACED", "TOKENIZER", "ContextCounter", "base64_data", "catalog",
           "code_tool_description", "count_tokens", "data_url", "failed_to_run", "images_line",
           "instructions", "item_text", "not_run", "note", "noted", "render", "responses_output",
           "with_catalog"]
