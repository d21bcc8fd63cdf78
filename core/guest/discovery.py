"""Finding and reading tools from inside the sandbox: `search_tools`, `help`, and a hint
when the code names a tool without its namespace."""

from __future__ import annotations

from . import channel
from .tools import ToolError, ToolFunction, ToolNamespace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Matches", "make_help", "namespace_hint", "search_tools"]


class Matches(list):
    """Search results: a list of dicts ("name", "signature", "summary") that prints one
    tool per line."""

    def __repr__(self) -> str:
        if not self:
            return "[] (no tool matched; try other words)"
        return "\n".join(f"{m.get('signature') or m.get('name')}: {m.get('summary', '')}"
                         for m in self)

    __str__ = __repr__


def search_tools(query: str, limit: int = 10) -> Matches:
    """Find tools by words in their names and descriptions, best first.

    Returns dicts with "name" (as you call it), "signature" and "summary";
    `help(name)` prints one in full.
    """
    reply = channel.request({"op": "search", "query": str(query), "limit": int(limit)})
    if not reply.get("ok"):
        raise ToolError(str(reply.get("error")), "search_tools")
    return Matches(reply.get("value") or ())


def _lookup(tools: dict[str, Any], name: str) -> Any:
    head, _, attr = name.partition(".")
    found = tools.get(head)
    if attr and isinstance(found, ToolNamespace):
        return found._tools.get(attr)
    return None if attr else found


def _all_names(tools: dict[str, Any]) -> list[str]:
    names = []
    for key, value in tools.items():
        if isinstance(value, ToolFunction):
            names.append(key)
        elif isinstance(value, ToolNamespace):
            names += [f"{key}.{attr}" for attr in value._tools]
    return names


def make_help(tools: dict[str, Any]) -> Any:
    """`help` for this sandbox: tools print their stubs, anything else goes to pydoc."""

    def help(obj: Any = None) -> None:
        """Show a tool's full signature and documentation (or Python's help for the rest)."""
        if isinstance(obj, str):
            found = _lookup(tools, obj)
            if found is None and obj.replace(".", "_").isidentifier():
                from .validate import did_you_mean

                hint = did_you_mean(obj, _all_names(tools))
                if hint:
                    print(f"there is no tool {obj!r}{hint}")
                    return
            obj = found if found is not None else obj
        if isinstance(obj, ToolFunction):
            print(obj.stub)
        elif isinstance(obj, ToolNamespace):
            print(f"# {obj.__name__}: {obj.__doc__}".rstrip(": "))
            for name in dir(obj):
                print(getattr(obj, name).stub, end="\n\n")
        elif obj is None:
            print("help(tool) shows a tool; search_tools('words') finds tools.")
        else:
            import pydoc

            pydoc.help(obj)

    return help


def namespace_hint(error: str, tools: dict[str, Any]) -> str:
    """A NameError for a tool that lives in a namespace, with where to find it added.

    Python's own suggestion covers names close to a global; `git_status` for
    `git.git_status` needs this one. An exact name in a namespace beats Python's guess.
    """
    marker = "NameError: name '"
    at = error.rfind(marker)
    if at < 0:
        return error
    end = error.find("\n", at)
    end = len(error) if end < 0 else end
    line = error[at:end]
    name = line[len(marker):].partition("'")[0]
    spaced = [n for n in _all_names(tools) if "." in n]
    found = [n for n in spaced if n.rpartition(".")[2] == name]
    if not found:
        if "Did you mean" in line:
            return error
        from .validate import did_you_mean

        close = did_you_mean(name, [n.rpartition(".")[2] for n in spaced])
        found = [n for n in spaced if f"'{n.rpartition('.')[2]}'" in close]
    if not found:
        return error
    line = line.partition(". Did you mean")[0].rstrip(".")
    hint = " or ".join(repr(n) for n in found[:3])
    return f"{error[:at]}{line}. Did you mean: {hint}?{error[end:]}"
