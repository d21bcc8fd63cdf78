"""DSPy: code mode for `dspy.ReAct`'s tools, and the sandbox as DSPy's `CodeInterpreter`.

    react = dspy.ReAct("question -> answer", tools=[as_dspy_tool([search, lookup])])

    dspy.configure(interpreter_factory=SandboxInterpreter)
    rlm = dspy.RLM("context, query -> answer")           # CodeAct, ProgramOfThought alike

`as_dspy_tool` makes ReAct's tools one `run_python` tool: the model's code calls them as
functions, each call validated and run as ReAct runs the model's own choice. `SandboxInterpreter`
runs the code of RLM, CodeAct and ProgramOfThought in tooliscode's sandbox (CPython on
WebAssembly, in this process) instead of Deno with Pyodide, its tools called on the host.
"""

from ._interpreter import SandboxInterpreter
from ._react import CodeModeTool, as_dspy_tool

__all__ = ["CodeModeTool", "SandboxInterpreter", "as_dspy_tool"]
