"""The engine: `Session`, the worker thread that drives one guest, the tool calls of a cell,
building the `CellResult`, the warm pool, the session folder, and keyed conversations."""
