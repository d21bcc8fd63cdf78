"""The catalog: the text that tells the model which tools it has, within a fixed budget.

It says as much as fits, richest first:

1. every tool's full stub (types, docstrings), for small sets;
2. one line per tool, `name(required: T, optional=default): summary`, grouped by namespace;
3. for large sets, each group with its size and as many `name: summary` lines as a fair
   share of the budget allows, then how to find the rest (`search_tools`, `help`);
4. when even that is too long (hundreds of groups), one line of names per group.

In the one-line forms, tools of a group whose descriptions open alike ("This tool belongs to
the X system.") are listed together under that opening, shown once, and each is summarised
by what follows it: a summary is there to tell tools apart.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from ..tools import Tool, ToolRegistry, ToolStub, clip, openings, summary

__all__ = ["catalog"]

_FIND_MORE = ("Listed {shown} of {total} tools. Find the others with search_tools('words'); "
              "help(name) prints one in full.")
_LINE_HELP = "help(name) prints a tool's types and full documentation."
_SHORT_SUMMARY = 80
_OPENING_CHARS = 240
"""The longest a shared opening is shown; one line for a group, so it may be longer than a
summary."""
_SHORT_OPENING = 120
_NEXT_OPEN = '# The next {n} tools\' descriptions all begin: "{text}"'
_MIN_PREFIX_GROUP = 3
_FIRST_WORD = re.compile(r"[^\W_]+?(?=_|[A-Z]|$)")  # a word in any script


@dataclass
class _Group:
    label: str
    namespace: str | None
    tools: list[Tool] = field(default_factory=list)
    opening: str = ""
    """What every description of the group begins with, shown once; summaries skip it."""


def catalog(registry: ToolRegistry, budget_chars: int = 6_000) -> str:
    """The tools as the model should first see them, in at most `budget_chars` characters."""
    tools = [t for t in registry if not t.metadata.get("hidden")]
    if not tools:
        return "(no tools)"
    groups = _by_namespace(tools)
    for render in (_full_stubs, _one_line_each):
        text = render(groups, budget_chars)
        if text is not None:
            return text
    return _fair_share(_by_prefix(_by_opening(groups)), len(tools), budget_chars)


def _by_namespace(tools: list[Tool]) -> list[_Group]:
    """Top-level tools first, then one group per namespace in order of appearance."""
    groups: dict[str | None, _Group] = {None: _Group("tools", None)}
    for tool in tools:
        ns = tool.namespace
        if ns not in groups:
            groups[ns] = _Group(ns, ns)
        groups[ns].tools.append(tool)
    return [g for g in groups.values() if g.tools]


def _by_prefix(groups: list[_Group]) -> list[_Group]:
    """Top-level tools split further by a shared first word (`github_...`), so a large flat
    set still shows its structure. Tools that share an opening stay together."""
    out: list[_Group] = []
    for group in groups:
        if group.namespace is not None or group.opening:
            out.append(group)
            continue
        by_word: dict[str, list[Tool]] = {}
        for tool in group.tools:
            word = _FIRST_WORD.match(tool.python_name)
            by_word.setdefault(word.group(0).lower() if word else "", []).append(tool)
        rest = _Group("other tools", None)
        for word, members in by_word.items():
            if word and len(members) >= _MIN_PREFIX_GROUP and len(members) < len(group.tools):
                out.append(_Group(f"{word}_*", None, members))
            else:
                rest.tools += members
        if rest.tools:
            rest.label = "tools" if len(rest.tools) == len(group.tools) else rest.label
            out.append(rest)
    return out


def _by_opening(groups: list[_Group]) -> list[_Group]:
    return [part for group in groups for part in _split(group)]


def _split(group: _Group) -> list[_Group]:
    """The group's tools that share an opening moved into a group of their own, after the
    rest of it: a block that ends where the group does."""
    shared = openings(group.tools)
    if not shared:
        return [group]
    inside = {id(t) for o in shared for t in o.tools}
    rest = [t for t in group.tools if id(t) not in inside]
    parts = [_Group(group.label, group.namespace, rest)] if rest else []
    return parts + [_Group(group.label, group.namespace, o.tools, o.text) for o in shared]


def _heading(group: _Group) -> list[str]:
    """Above stubs, which show bare names: how to reach a namespace's tools."""
    ns = group.namespace
    return [f"# {ns}: call as {ns}.<name>(...)"] if ns is not None else []


def _full_stubs(groups: list[_Group], budget: int) -> str | None:
    blocks: list[str] = []
    seen: set[str] = set()
    used = 0
    for group in groups:
        new = _heading(group)
        for tool in group.tools:
            built = ToolStub.of(tool)
            new += [s for s in built.classes.values() if s not in seen]
            seen.update(built.classes.values())  # a shape several tools share is written once
            new.append(built.function(header=False))
            used += sum(len(b) + 2 for b in new)
            if used > budget:
                return None
            blocks += new
            new = []
    return "\n\n".join(blocks)


def _one_line_each(groups: list[_Group], budget: int) -> str | None:
    lines: list[str] = []
    used = len(_LINE_HELP)
    for group in groups:
        head = _heading(group)  # once, above all its parts
        for part in _split(group):  # a group at a time: the budget may run out early
            if part.opening:
                head.append(_NEXT_OPEN.format(n=len(part.tools),
                                              text=clip(part.opening, _OPENING_CHARS)))
            lines_of_part = (_brief_line(t, part.opening) for t in part.tools)
            for line in itertools.chain(head, lines_of_part):  # lazily: may stop early
                used += len(line) + 1
                if used > budget:
                    return None
                lines.append(line)
            head = []
    return "\n".join([*lines, _LINE_HELP])


def _brief_line(tool: Tool, opening: str) -> str:
    text = summary(tool, opening=opening)
    return f"- {ToolStub.of(tool).brief()}" + (f": {text}" if text else "")


def _fair_share(groups: list[_Group], total: int, budget: int) -> str:
    """Every group named with its size; tool lines added one per group per round."""
    footer = _FIND_MORE.format(shown=total, total=total)
    heads = [f"# {g.label} ({len(g.tools)} tools)" + (
        f'; each description begins: "{clip(g.opening, _SHORT_OPENING)}"' if g.opening else "")
        for g in groups]
    tails = [f"  ... and {len(g.tools)} more" for g in groups]  # the longest a tail can be
    room = budget - len(footer) - sum(len(h) + len(t) + 2 for h, t in zip(heads, tails))
    if room < sum(len(_line(g.tools[0], g.opening)) + 1 for g in groups):  # not one each
        return _names_only(groups, total, budget)
    shown: list[list[str]] = [[] for _ in groups]
    progress = True
    while progress:
        progress = False
        for i, group in enumerate(groups):
            n = len(shown[i])
            if n < len(group.tools):
                line = _line(group.tools[n], group.opening)
                if len(line) + 1 <= room:
                    shown[i].append(line)
                    room -= len(line) + 1
                    progress = True
    lines: list[str] = []
    for head, group, listed in zip(heads, groups, shown):
        lines += [head, *listed]
        if len(listed) < len(group.tools):
            lines.append(f"  ... and {len(group.tools) - len(listed)} more")
    count = sum(len(s) for s in shown)
    return "\n".join([*lines, _FIND_MORE.format(shown=count, total=total)])


def _line(tool: Tool, opening: str = "") -> str:
    text = summary(tool, _SHORT_SUMMARY, opening)
    return f"- {tool.qualified_name}" + (f": {text}" if text else "")


def _names_only(groups: list[_Group], total: int, budget: int) -> str:
    """One line of names per group, each cut to an equal share of the budget."""
    footer = _FIND_MORE.format(shown=total, total=total)
    share = max(40, (budget - len(footer)) // len(groups) - 1)
    lines: list[str] = []
    used, count = len(footer), 0
    for g, group in enumerate(groups):
        line = f"{group.label} ({len(group.tools)}):"
        listed = 0
        for tool in group.tools:
            piece = f" {tool.python_name},"
            if len(line) + len(piece) + 4 > share:
                break
            line += piece
            listed += 1
        line = line.rstrip(",") + (" ..." if listed < len(group.tools) else "")
        rest = f"... and {len(groups) - g} more groups"
        if used + len(line) + 1 + len(rest) + 1 > budget:
            lines.append(rest)
            break
        lines.append(line)
        used += len(line) + 1
        count += listed
    return "\n".join([*lines, _FIND_MORE.format(shown=count, total=total)])
