"""Rewrite the golden files: the real MCP servers' tool lists and the expected stubs.

Run: .venv/bin/python tests/golden/refresh.py   then read `git diff tests/golden` before
committing: every change in an expected stub is a change in what models will read.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SCHEMAS = HERE / "schemas"
EXPECTED = HERE / "expected"
LIVE = ("mcp_time", "mcp_git")
"""Corpus files taken from servers installed in the venv; the others are kept by hand."""


async def live_tools(corpus: str) -> list[dict[str, Any]]:
    """The tools an installed MCP server lists, as it sends them on the wire."""
    if corpus == "mcp_time":
        from mcp_server_time.server import create_server

        server = create_server("UTC")
    else:
        from mcp_server_git.server import create_server

        server = create_server(None)
    tools = await server.list_tools()
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True,
                         include={"name", "description", "input_schema", "output_schema"})
            for t in tools]


def corpus_tools(corpus: str) -> list[Any]:
    """The corpus file's tools as `Tool`s (MCP shape or OpenAI shapes)."""
    from tooliscode import Tool

    out = []
    for item in json.loads((SCHEMAS / f"{corpus}.json").read_text()):
        if "inputSchema" in item:
            out.append(Tool(name=item["name"], description=item.get("description") or "",
                            parameters=item["inputSchema"], output_schema=item.get("outputSchema"),
                            namespace=item.get("namespace")))
        else:
            out.append(Tool.from_openai(item, namespace=item.get("namespace")))
    return out


def expected_text(corpus: str) -> str:
    from tooliscode.tools._stubs import stub

    return "\n\n\n".join(stub(t) for t in corpus_tools(corpus)) + "\n"


def corpora() -> list[str]:
    return sorted(p.stem for p in SCHEMAS.glob("*.json"))


def main() -> None:
    for corpus in LIVE:
        tools = asyncio.run(live_tools(corpus))
        (SCHEMAS / f"{corpus}.json").write_text(json.dumps(tools, indent=1) + "\n")
    EXPECTED.mkdir(exist_ok=True)
    for corpus in corpora():
        (EXPECTED / f"{corpus}.txt").write_text(expected_text(corpus))
        print(f"wrote expected/{corpus}.txt", file=sys.stderr)


if __name__ == "__main__":
    main()
