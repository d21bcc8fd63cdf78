"""Tools -> the typed Python stubs the model reads and the specs the guest binds calls with.

One `ToolStub` per tool is the single source of both, so what `help(tool)` shows is exactly
how a call binds: parameter order, names, defaults and which `None`s mean "not given".
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..guest import resolve
from ._pytypes import TypeWriter, describe, docstring, pascal, union
from ._summary import clip, summary
from ._tool import Tool, python_name

__all__ = ["Param", "ToolStub", "guest_spec", "search_entry", "stub", "summary"]

_WIDTH = 100
_DOC_WIDTH = 92  # inside a docstring indented by 4, so lines stay under _WIDTH
_KWARGS = "**kwargs: other keys, passed on as given."
_ANY_DICT = "dict[str, Any]"
_SAYS_NOTHING = frozenset({"Any", _ANY_DICT, "object"})
"""Return types that tell the model nothing it does not assume: left out where space counts."""


@dataclass(frozen=True)
class Param:
    """One parameter of a stub."""

    name: str
    """As Python writes it."""
    key: str
    """The key in the arguments object the tool receives."""
    annotation: str
    default: str | None
    """Source text of the default; None when the parameter is required."""
    omit_none: bool
    """`None` means "not given": the schema has no null, so the key is left out."""
    doc: str

    def source(self) -> str:
        text = f"{self.name}: {self.annotation}"
        return text if self.default is None else f"{text} = {self.default}"


@dataclass(frozen=True)
class ToolStub:
    """A tool as a typed Python function declaration."""

    tool: Tool
    params: tuple[Param, ...]
    kwargs: str | None
    """The annotation of `**kwargs` when the schema says which keys beyond its parameters
    the tool takes."""
    open: bool
    """Whether a call may pass keys beyond the parameters. True as well for a schema that
    declares no keys and does not forbid others: shown as `name()`, which is how it is meant
    to be called, but any keyword is passed on, as JSON Schema allows."""
    returns: str
    classes: Mapping[str, str]
    """Sources of the `TypedDict` classes and type aliases the annotations name, by name."""

    @classmethod
    def of(cls, tool: Tool) -> ToolStub:
        """The tool's stub, kept on the tool while what it is made from stays the same (see
        `guest_spec`): catalogs, specs and searches all need it."""
        key = _made_from(tool)
        cached = tool.__dict__.get("_stub")
        if cached is not None and cached[0] == key:
            return cached[1]
        built = cls._build(tool)
        # The schemas are held too, so their ids cannot be reused by new ones.
        tool.__dict__["_stub"] = (key, built, tool.parameters, tool.output_schema)
        return built

    @classmethod
    def _build(cls, tool: Tool) -> ToolStub:
        writer = TypeWriter(tool.parameters)
        owner = pascal(tool.python_name)
        props, required, extra = _root_shape(tool.parameters)
        params: list[Param] = []
        # Keys that are already Python names keep them; the others are fitted around them.
        taken = {k for k in props if python_name(k) == k}
        for key, prop in props.items():
            name = key if key in taken else _unique(python_name(key), taken)
            ann = writer.annotation(prop, owner + pascal(key))
            default, omit = None, False
            if key not in required:
                has_default = isinstance(prop, Mapping) and "default" in prop
                omit = not has_default and union([ann, "None"]) != ann  # no null in the schema
                default = _default_source(prop["default"]) if has_default else "None"
                ann = union([ann, "None"]) if omit else ann
            params.append(Param(name, key, ann, default, omit, describe(prop)))
        params.sort(key=lambda p: p.default is not None)  # stable: schema order within each
        kwargs = None
        if extra is not False and extra is not None:
            kwargs = writer.annotation(extra, owner + "Extra") if extra is not True else "Any"
        open_ = kwargs is not None or (not props and extra is None)
        returns = "Any"
        if tool.output_schema:
            writer.use(tool.output_schema)
            title = tool.output_schema.get("title")
            hint = title if isinstance(title, str) and title.isidentifier() and \
                title[:1].isupper() else f"{owner}Result"
            returns = writer.annotation(tool.output_schema, hint)
        return cls(tool, tuple(params), kwargs, open_, returns, writer.classes)

    @property
    def telling_returns(self) -> str:
        """The return annotation, or "" when it says nothing (`Any`, a bare `dict`)."""
        return "" if self.returns in _SAYS_NOTHING else self.returns

    def signature(self, name: str | None = None, brief: bool = False) -> str:
        """`name(a: int, b: str = 'x') -> R` on one line; `name` defaults to the qualified one.
        `brief` leaves out a return type that says nothing."""
        returns = self.telling_returns if brief else self.returns
        tail = f" -> {returns}" if returns else ""
        return f"{name or self.tool.qualified_name}({', '.join(self._parts())}){tail}"

    def brief(self) -> str:
        """`name(a: int, b=None)`: required parameters typed, optional ones by name only, and
        the return type when it says something."""
        parts = [p.source() if p.default is None else f"{p.name}={p.default}"
                 for p in self.params]
        if self.kwargs:
            parts.append("**kwargs")
        tail = f" -> {self.telling_returns}" if self.telling_returns else ""
        return f"{self.tool.python_name}({', '.join(parts)}){tail}".replace(_ANY_DICT, "dict")

    def source(self, header: bool = True) -> str:
        """The classes it needs, then `def` with a docstring: what `help(tool)` prints."""
        blocks = list(self.classes.values())
        blocks.append(self.function(header))
        return "\n\n".join(blocks)

    def function(self, header: bool = True, description: str | None = None,
                 brief: bool = False) -> str:
        """`def` with a docstring. `description` replaces the tool's (the catalog gives its
        own text, a group's shared text shown once above it). `brief`, for the catalog, spends
        no tokens on what says nothing: a return type such as `Any`, `[str, Any]` after
        `dict`, lines folded to a width."""
        name = self.tool.python_name
        one_line = f"def {self.signature(name, brief)}:"
        if len(one_line) <= _WIDTH or brief:
            head = one_line
        else:
            inner = "".join(f"\n    {part}," for part in self._parts())
            head = f"def {name}({inner}\n) -> {self.returns}:"
        if brief:
            head = head.replace(_ANY_DICT, "dict")
        if header and self.tool.namespace:
            head = f"# {self.tool.qualified_name}\n{head}"
        text = self.tool.description if description is None else description
        doc = self._brief_doc(text) if brief else self._doc(text)
        return f"{head}\n    {docstring(doc, '    ', tight=brief)}" if doc else f"{head} ..."

    def _parts(self) -> list[str]:
        parts = [p.source() for p in self.params]
        if self.kwargs:
            parts.append(f"**{_unique('kwargs', {p.name for p in self.params})}: {self.kwargs}")
        return parts

    def _doc(self, description: str) -> str:
        parts = [_wrap(line) for line in (description or "").strip().splitlines()]
        args = [_wrap(f"{p.name}: {p.doc}", "    ") for p in self.params if p.doc]
        if self.kwargs:
            args.append("    " + _KWARGS)
        if args:
            parts += ["", "Args:", *args] if parts else ["Args:", *args]
        out = self._returns()
        if out:
            parts += ["", "Returns:", _wrap(out, "    ")]
        return "\n".join(parts)

    def _brief_doc(self, description: str) -> str:
        """The docstring as the catalog shows it: each paragraph of the description on one
        line, then a line per documented parameter, then what it returns. Headings, blank
        lines and folds would cost tokens on every model call and say nothing more."""
        parts = _unfolded((description or "").strip().splitlines())
        parts += [f"{p.name}: {p.doc}" for p in self.params if p.doc]
        if self.kwargs:
            parts.append(_KWARGS)
        out = self._returns()
        return "\n".join(parts + ([f"Returns: {out}"] if out else []))

    def _returns(self) -> str:
        return describe(self.tool.output_schema) if self.tool.output_schema else ""


_OWN_LINE = re.compile(r"\s|[-*•#|>]|\d+[.)]\s|$")
"""How a line starts that is not the rest of the sentence above: indented, a list item, a
heading, a table row, or blank."""


def _unfolded(lines: list[str]) -> list[str]:
    """Lines folded to a width joined back into one line per paragraph; lists, indented
    blocks and headed sections keep their lines."""
    out: list[str] = []
    for line in lines:
        if out and out[-1].strip() and not out[-1].endswith(":") and not _OWN_LINE.match(line):
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return out


def _wrap(line: str, indent: str = "") -> str:
    """A long docstring line folded at the stub width; continuation lines keep its indent
    (one level deeper under an `Args:` entry)."""
    if len(indent) + len(line) <= _DOC_WIDTH:
        return indent + line
    lead = line[: len(line) - len(line.lstrip())]
    more = indent + lead + ("    " if indent else "")
    return textwrap.fill(line.strip(), _DOC_WIDTH, initial_indent=indent + lead,
                         subsequent_indent=more, break_long_words=False,
                         break_on_hyphens=False)


def _default_source(value: Any) -> str:
    """A JSON default as Python source; `...` for the float infinities, which have none."""
    if isinstance(value, float) and not math.isfinite(value):
        return "..."
    return repr(value)


def _unique(name: str, taken: set[str]) -> str:
    out, n = name, 2
    while out in taken:
        out, n = f"{name}_{n}", n + 1
    taken.add(out)
    return out


def _root_shape(schema: Mapping[str, Any]) -> tuple[dict[str, Any], set[str], Any]:
    """(properties, required keys, additionalProperties) of an arguments schema, with the
    properties its `allOf`/`anyOf`/`oneOf` parts add (those of alternatives as optional)."""
    schema = _deref(schema, schema)
    props = dict(schema.get("properties") or {})
    required = set(schema.get("required") or ())
    for key in ("allOf", "anyOf", "oneOf"):
        for part in schema.get(key) or ():
            if not isinstance(part, Mapping):
                continue
            part = _deref(schema, part)
            for name, prop in (part.get("properties") or {}).items():
                props.setdefault(name, prop)
            if key == "allOf":
                required |= set(part.get("required") or ())
    return props, required & set(props), schema.get("additionalProperties")


def _deref(root: Mapping[str, Any], part: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = part.get("$ref")
    if not isinstance(ref, str):
        return part
    node = resolve(root, ref)
    return node if isinstance(node, Mapping) else {}


def stub(tool: Tool) -> str:
    """The full stub of one tool, as `help(tool)` prints it."""
    return ToolStub.of(tool).source()


_SIGNATURE_CHARS = 500
"""A search result's signature is cut here: `help(tool)` shows the whole stub."""


def search_entry(tool: Tool, said: str | None = None) -> dict[str, str]:
    """What `search_tools` returns for one tool; `said` is its summary when known (from
    `ToolRegistry.summary`, which leaves out boilerplate shared with other tools)."""
    return {"name": tool.qualified_name,
            "signature": clip(ToolStub.of(tool).signature(brief=True), _SIGNATURE_CHARS),
            "summary": summary(tool) if said is None else said}


def guest_spec(tool: Tool) -> dict[str, Any]:
    """What the guest's `ToolFunction` is built from.

    Kept on the tool and reused while its name, description, namespace and schema objects
    are the same ones: every new session (one per conversation) needs the specs of all its
    tools. A schema changed in place is not noticed; assign a new dict instead.
    """
    key = _made_from(tool)
    cached = tool.__dict__.get("_guest_spec")
    if cached is not None and cached[0] == key:
        return cached[1]
    spec = _spec(tool)
    tool.__dict__["_guest_spec"] = (key, spec)
    return spec


def _made_from(tool: Tool) -> tuple[Any, ...]:
    """What a tool's stub and spec are made from; a schema by identity, as comparing it
    would cost as much as making them again."""
    return (tool.name, tool.description, tool.namespace, tool.python_name,
            id(tool.parameters), id(tool.output_schema))


def _spec(tool: Tool) -> dict[str, Any]:
    s = ToolStub._build(tool)  # not kept on the tool: the spec is, and holds all it needs
    return {
        "name": tool.python_name,
        "wire": tool.name,
        "namespace": tool.namespace,
        "shown": tool.qualified_name,
        "params": [p.name for p in s.params],
        "required": [p.name for p in s.params if p.default is None],
        "open": s.open,
        "keys": {p.name: p.key for p in s.params if p.name != p.key},
        "omit_none": [p.name for p in s.params if p.omit_none],
        "schema": tool.parameters,
        "doc": tool.description,
        "summary": summary(tool),
        "stub": s.source(),
        "signature": s.signature(),
    }
