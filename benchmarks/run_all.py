"""Every benchmark in one command: latency (cells, tool calls, gather, session start), what a
tool call costs against the bare crossing into the host, output streamed as it is printed,
tools as code (generation, catalog, search), scale, tokens, and the peer comparison. Prints
one table per group and writes benchmarks/RESULTS.md.

Run: make bench   (or python benchmarks/run_all.py [--no-peer] [--no-write])
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib
import subprocess
import sys
import time
from pathlib import Path

from _util import Row, machine, table

HERE = Path(__file__).resolve().parent
GROUPS = [
    ("Sandbox core", "bench_core"),
    ("Tool-call cost", "bench_crossing"),
    ("Fresh interpreters", "bench_fresh"),
    ("Durable sessions", "bench_durable"),
    ("Tools as code", "bench_codegen"),
    ("Scale", "bench_scale"),
    ("Tokens and round trips", "bench_tokens"),
    ("Peers and adapters", "bench_peers"),
    ("More adapters: Google ADK, LlamaIndex, CrewAI", "bench_adapter_calls"),
    ("Agent Framework and smolagents", "bench_frameworks"),
    ("Approval inside code", "bench_approval"),
    ("Output as it is printed", "bench_stream"),
    ("Data runtime", "bench_data"),
    ("Default runtime: CPython 3.14 as a pre-initialized component", "bench_default"),
    ("A stopped cell costs only itself", "bench_rollback"),
    ("A framework's cancel reaches the cell", "bench_framework_cancel"),
]


def _rows(module_name: str, peer: bool) -> list[Row]:
    module = importlib.import_module(module_name)
    if module_name == "bench_peers":
        return asyncio.run(module.arows(peer=peer))
    if module_name == "bench_crossing":
        return module.rows(peer=peer)
    return list(module.rows())


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, text=True,
                             capture_output=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _summary(rows: list[tuple[str, ...]]) -> str:
    """How many targets were met, and which were not."""
    judged = [r for r in rows if r[-1] not in ("info", "-")]
    missed = [f"{r[1]} ({r[2]}, target {r[3]})" for r in judged if r[-1] != "ok"]
    text = f"Targets met: {len(judged) - len(missed)} of {len(judged)}."
    return text + (" Not met: " + "; ".join(missed) + "." if missed else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-peer", action="store_true",
                        help="skip the peers in their own environments (pydantic-ai-harness, "
                             "smolagents)")
    parser.add_argument("--no-write", action="store_true", help="do not write RESULTS.md")
    parser.add_argument("--only", nargs="*", help="module names to run (default: all)")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    sections, every = [], []
    for title, name in GROUPS:
        if args.only and name not in args.only:
            continue
        print(f"\n## {title} ({name}.py)", flush=True)
        started = time.perf_counter()
        try:
            rows = _rows(name, peer=not args.no_peer)
        except Exception as exc:  # noqa: BLE001 - one broken group is reported, the rest still run
            rows = [Row(f"{name}.py did not finish", f"{type(exc).__name__}: {exc}"[:300], "-",
                        "failed")]
        every += [(title, *row) for row in rows]
        text = table(rows)
        print(text, flush=True)
        sections.append(f"## {title}\n\n`benchmarks/{name}.py`, "
                        f"{time.perf_counter() - started:.0f} s\n\n{text}\n")
    summary = _summary(every)
    print(f"\n## Every figure\n{table(every, ('group', *Row._fields))}\n\n{summary}")
    if not args.no_write and not args.only:
        header = (f"# Benchmark results\n\nThe last run of `make bench` "
                  f"({dt.date.today().isoformat()}, commit {_commit()}).\n\n"
                  f"Machine: {machine()}. Medians unless said; every ratio is against a "
                  f"baseline measured in the same run.\n\n{summary}\n\n")
        (HERE / "RESULTS.md").write_text(header + "\n".join(sections), "utf-8")
        print(f"\nwrote {HERE / 'RESULTS.md'}")


if __name__ == "__main__":
    main()
