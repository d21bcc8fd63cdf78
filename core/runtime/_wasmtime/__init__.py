"""The plumbing both runtimes under wasmtime share: raw C-API calls, host functions, shadowed
WASI imports, stoppable sleeps, the epoch ticker, the compile cache and the folder quota, and
`WasmtimeInstance`/`WasmtimeRuntimeBase`, which each runtime's own classes extend."""
