"""LangChain: a collection of tools as one code tool.

    code = as_langchain_tool([search_orders, get_customer])   # BaseTools, callables, a toolkit
    agent = create_agent(model, tools=[code])

The model sees `run_python`; its code calls the wrapped tools as Python functions. Each call
runs the real tool with `invoke`/`ainvoke` and the code tool's config, its callbacks replaced
by the code tool run's child manager, so inner calls show as child runs in tracers. A
`ToolException` from an inner tool is raised in the code as a `ToolError`; a failed cell comes
back as the tool's content with `status="error"`.

One interpreter per conversation: the `thread_id` in the run config picks it (LangGraph puts
it there from the checkpointer config). Without one, the tool keeps a single interpreter.

    hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True})
    agent = create_agent(model, middleware=[CodeModeMiddleware([find_orders, send_email]), hitl],
                         checkpointer=saver)

`CodeModeMiddleware`, listed first, gives the agent the code tool and sends each call the code
makes through the agent's tool-call middleware, so they see it as a direct call; a call the
agent's human-in-the-loop middleware reviews pauses the cell and interrupts the graph as a
direct call would, and `Command(resume=...)` continues the cell where it stopped.
"""

from ._middleware import CodeModeMiddleware
from ._tool import CodeModeTool, as_langchain_tool

__all__ = ["CodeModeMiddleware", "CodeModeTool", "as_langchain_tool"]
