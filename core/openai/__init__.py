"""The raw OpenAI APIs: `ToolIsCode`, parsing and rendering tool calls for both APIs, the
conversation loop, streaming, text mode, and a scripted OpenAI-compatible server."""
