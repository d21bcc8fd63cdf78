"""CrewAI's tests run in their own environment (.venv-crewai, made by `make setup`): crewai
pins mcp<2 and openai<3, which the other frameworks' extras cannot share. CrewAI's telemetry
and tracing stay off: the tests reach no network."""

import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
