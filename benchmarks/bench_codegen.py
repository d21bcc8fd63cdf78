"""Tools as code: SDK generation time for 1,000 tools, the catalog's size at 10, 100 and 1,000
tools, search time, and a session's start with 1,000 tools.

The tools are the golden corpus's real schemas (MCP servers, GitHub- and filesystem-style,
OpenAI examples, nested ones) under 25 made-up service namespaces.

Run: python benchmarks/bench_codegen.py   (prints medians and targets)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from _util import Row, machine, median_s, table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from golden.synthetic import synthetic_tools
from tooliscode import Limits, Session, ToolRegistry
from tooliscode.prompt._catalog import catalog
from tooliscode.prompt._tokens import TOKENIZER, count_tokens
from tooliscode.tools._stubs import guest_spec

CATALOG_BUDGET_TOKENS = 1_500


def rows() -> list[Row]:
    rows = []
    tools = synthetic_tools(1_000)
    registry = ToolRegistry(tools)

    # Fresh tools for each run: a tool keeps its spec, and this measures making them.
    fresh = iter([synthetic_tools(1_000) for _ in range(11)])
    sdk = median_s(lambda: [guest_spec(t) for t in next(fresh)], 9, warmup=2)
    rows.append(("SDK generation, 1,000 tools (stubs, specs, summaries)", f"{sdk * 1e3:.0f} ms",
                 "<= 200 ms", "ok" if sdk <= 0.2 else "over"))

    for n in (10, 100, 1_000):
        subset = ToolRegistry(tools[:: len(tools) // n][:n])
        text = catalog(subset)
        took = median_s(lambda subset=subset: catalog(subset), 9, warmup=2)
        estimate = len(text) / 4
        target = f"<= {CATALOG_BUDGET_TOKENS:,} tokens"
        measured = (f"{len(text):,} chars = {estimate:,.0f} tokens (chars/4), "
                    f"{count_tokens(text):,} counted; {took * 1e3:.1f} ms")
        rows.append((f"catalog, {n:,} tools ({_level(text)})", measured, target,
                     "ok" if estimate <= CATALOG_BUDGET_TOKENS else "over"))

    index = median_s(lambda: ToolRegistry(tools).search("x"), 5, warmup=1)
    query = median_s(lambda: registry.search("create a pull request review", 10), 50)
    rows.append(("search index build, 1,000 tools", f"{index * 1e3:.0f} ms", "-", "-"))
    rows.append(("search_tools query, 1,000 tools (host side)", f"{query * 1e3:.2f} ms",
                 "<= 5 ms", "ok" if query <= 5e-3 else "over"))

    def start() -> float:
        time.sleep(1.0)  # let the warm pool refill, as a server between conversations would
        t0 = time.perf_counter()
        with Session(registry, limits=Limits(timeout_s=60)) as s:
            s.run("1")
            return time.perf_counter() - t0

    start()  # the compiled module and the pool, once
    session = sorted(start() for _ in range(5))[2]
    rows.append(("new session with 1,000 tools to first result (warm pool)",
                 f"{session * 1e3:.0f} ms", "-", "-"))

    return [Row(*r) for r in rows]


def main() -> None:
    print(f"machine: {machine()}\ntokens counted with: {TOKENIZER}\n")
    print(table(rows()))


def _level(text: str) -> str:
    if text.lstrip().startswith(("def ", "class ", "# ")) and '"""' in text:
        return "full stubs"
    if "Listed " in text:
        return "grouped names"
    return "one line each"


if __name__ == "__main__":
    main()
