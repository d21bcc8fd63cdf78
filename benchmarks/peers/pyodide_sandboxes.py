"""The two pyodide sandboxes as their users start them: pydantic's `mcp-run-python`
(`code_sandbox`, an MCP server on Deno) and LangChain's `langchain-sandbox` (`PyodideSandbox`,
Deno running a JSR package), each timed from its start to the result of a `print(1)` and, when
that works, of the pandas groupby of bench_data.py. Runs in the pyodide environment that
peers/pyodide_peer.py makes; prints one JSON object: per sandbox its seconds or its error.

    python pyodide_sandboxes.py '{"groupby": "...", "timeout_s": 120}'
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any


async def mcp_run_python(code: str) -> str:
    from mcp_run_python import code_sandbox

    async with code_sandbox(dependencies=["numpy", "pandas"] if "pandas" in code else None) as box:
        result = await box.eval(code)
    if result["status"] != "success":
        raise RuntimeError(f"{result['status']}: {result.get('error') or result['output']}")
    return "\n".join(result["output"])


async def langchain_sandbox(code: str) -> str:
    from langchain_sandbox import PyodideSandbox

    result = await PyodideSandbox(allow_net=True).execute(code)
    if result.status != "success":
        raise RuntimeError(result.stderr or str(result))
    return result.stdout or ""


def _error(exc: BaseException) -> str:
    """What failed: the URL Deno could not load, when it says one."""
    for group in getattr(exc, "exceptions", ()):  # task groups wrap the real error
        return _error(group)
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    url = re.search(r"Import '([^']+)' failed", text) or re.search(r"load from (\S+)", text)
    if url:
        return f"could not load {url[1]}"
    said = re.search(r"error: (.*)", text)
    return (said[1] if said else text).strip()[:300]


async def timed(run: Callable[[str], Awaitable[str]], code: str, timeout_s: float) -> dict:
    start = time.perf_counter()
    try:
        out = await asyncio.wait_for(run(code), timeout_s)
    except Exception as exc:  # noqa: BLE001 - the peer's failure is the figure
        return {"error": _error(exc)}
    return {"s": time.perf_counter() - start, "output": out.strip()[-200:]}


async def main() -> None:
    config: dict[str, Any] = json.loads(sys.argv[1])
    found = {}
    for name, run in (("mcp-run-python", mcp_run_python), ("langchain-sandbox",
                                                           langchain_sandbox)):
        first = await timed(run, "print(1)", config["timeout_s"])
        if "error" not in first:
            first["groupby"] = await timed(run, config["groupby"], config["timeout_s"])
        found[name] = first
    print(json.dumps(found))


if __name__ == "__main__":
    asyncio.run(main())
