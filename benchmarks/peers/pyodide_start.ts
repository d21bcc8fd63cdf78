// Pyodide, the interpreter under mcp-run-python and langchain-sandbox, in Deno: new interpreters
// to a first result, then the pandas groupby of bench_data.py if pandas can be loaded. Pyodide's
// own version is the one mcp-run-python pins. Prints one JSON object; run by peers/pyodide_peer.py.
//
//   deno run --cached-only -A pyodide_start.ts '{"samples": 5, "groupby": "..."}'

import { loadPyodide, version } from "npm:pyodide@0.28.2";

const config = JSON.parse(Deno.args[0]);
// The host notes the wall clock before starting Deno: this one is the first result's.
const py = await loadPyodide();
py.runPython("print(1)");
const firstEpochMs = Date.now();
const startMs: number[] = [];
for (let i = 0; i < config.samples; i++) {
  const t = performance.now();
  const fresh = await loadPyodide();
  fresh.runPython("1");
  startMs.push(performance.now() - t);
}

// pyodide's npm package carries the interpreter and its standard library only: every other
// package is fetched from its package base URL when loaded; those URLs are what we report.
const fetched: string[] = [];
const errors: string[] = [];
await py.loadPackage(["numpy", "pandas"], {
  messageCallback: (m: string) => {
    const url = m.match(/load from (\S+)/);
    if (url) fetched.push(url[1] + m.match(/package (\S+)/)![1]);
  },
  errorCallback: (m: string) => errors.push(m),
});
let groupbyS: number | null = null;
let pandas: string | null = null;
try {
  pandas = py.runPython("import pandas; pandas.__version__");
  py.setStdout({ batched: (line: string) => (groupbyS = Number(line)) });
  py.runPython(config.groupby);
} catch (e) {
  errors.push(String(e).split("\n").slice(-2).join(" "));
}

console.log(JSON.stringify({
  version,
  first_epoch_ms: firstEpochMs,
  start_ms: startMs,
  pandas,
  groupby_s: groupbyS,
  fetched,
  errors: errors.slice(0, 4),
}));
