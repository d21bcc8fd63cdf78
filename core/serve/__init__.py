"""`tooliscode serve`: code mode for models without native tool calling, as an OpenAI server.

    tooliscode serve --upstream http://localhost:11434/v1 --model qwq --port 8000

Clients send ordinary Chat Completions requests with `tools`; the upstream model is told the
tools are Python functions, writes a ```python block, and the calls in it come back to the
client as standard `tool_calls`. Requests without tools pass straight through.

    with Server(ServeConfig(upstream="http://localhost:11434/v1", port=0)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")
"""

from __future__ import annotations

from ._recorder import RECORDING_LIMITS
from ._server import ServeConfig, Server

__all__ = ["RECORDING_LIMITS", "ServeConfig", "Server"]
