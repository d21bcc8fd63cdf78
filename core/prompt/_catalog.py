"""The catalog: the text that tells the model which tools it has, within a fixed budget.

It says as much as fits, richest first:

1. every tool's full stub (types, docstrings), for a few tools: while the stubs take at
   most a third of the budget, since they are sent on every model call;
2. one line per tool, `name(required: T, optional=default): summary`, grouped by namespace,
   and `help` named for the rest;
3. for large sets, each group with its size and as many `name: summary` lines as a fair
   share of the budget allows, then how to find the rest (`search_tools`, `help`);
4. when even that is too long (hundreds of groups), one line of names per group.

Tools of a group whose descriptions share boilerplate (an opening such as "This tool belongs
to the X system. ... Tool description:", a closing note) are listed together under that text,
shown once, and each is summarised (or, in full stubs, documented) by its own text: a summary
is there to tell tools apart. Return types that say nothing (`Any`, a bare `dict`) are left
out; `help(name)` shows them.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from ..tools import (
    SUMMARY_CHARS,
    Tool,
    ToolRegistry,
    ToolStub,
    clip,
    own_text,
    shared_texts,
    summary,
)
from ._tokens import count_tokens

__all__ = ["catalog"]

_FIND_MORE = ("Listed {shown} of {total} tools. Find the others with search_tools('words'); "
              "help(name) prints one in full.")
_LINE_HELP = "help(name) prints a tool's types and full documentation."
_SHORT_SUMMARY = 80
_OPENING_CHARS = 240
"""The longest a shared opening is shown; one line for a group, so it may be longer than a
summary."""
_SHORT_OPENING = 120
_NEXT_OPEN = '# The next {n} tools\' descriptions begin "{opening}"'
_NEXT_CLOSE = '# The next {n} tools\' descriptions end "{closing}"'
_AND_CLOSE = ' and end "{closing}"'
_FULL_SHARE = 1 / 3
"""Full stubs are shown only while they take at most this share of the budget: they are sent
on every model call, and beyond a few tools one line each (and `help` for the rest, which the
catalog's last line names) costs a conversation less."""
_MIN_CHARS_PER_TOKEN = 3.0
"""Catalog text runs to 3.5-4.6 characters per o200k_base token (the golden catalogs, and
1,000 synthetic tools at 3.59): a text of at most this many characters per token of its budget
is within it uncounted. Counting loads a tokenizer (bpe-openai takes a second), which a new
process building a small catalog should not wait for."""
_WORTH = 60
"""Characters a shared text must save, over the tools of a group, to be taken out of their
full stubs and written once (a header costs about this much)."""
_MIN_PREFIX_GROUP = 3
_FIRST_WORD = re.compile(r"[^\W_]+?(?=_|[A-Z]|$)")  # a word in any script


@dataclass
class _Group:
    label: str
    namespace: str | None
    tools: list[Tool] = field(default_factory=list)
    opening: str = ""
    """What every description of the group begins with, shown once; summaries skip it."""
    closing: str = ""
    """What every description of the group ends with, shown once; summaries skip it."""
    lone: dict[int, str] = field(default_factory=dict)
    """Openings that one tool of the group shares only with tools of other groups, by the
    tool's id: its summary skips it, and other groups' headers show it."""
    parts: dict[bool, list[_Group]] = field(default_factory=dict)
    """`_split`'s answers, by `closings`: each form that is tried needs them."""

    def own(self, tool: Tool) -> str:
        lone = self.lone.get(id(tool))
        return own_text(tool, lone) if lone else own_text(tool, self.opening, self.closing)

    def summary(self, tool: Tool, limit: int = SUMMARY_CHARS) -> str:
        lone = self.lone.get(id(tool))
        if lone:
            return summary(tool, limit, lone)
        return summary(tool, limit, self.opening, self.closing)

    def header(self, limit: int = _OPENING_CHARS) -> str | None:
        """The line above the group's tools that holds its shared text."""
        n, closing = len(self.tools), clip(self.closing, limit)
        if self.opening:
            head = _NEXT_OPEN.format(n=n, opening=clip(self.opening, limit))
            return head + (_AND_CLOSE.format(closing=closing) if closing else "")
        return _NEXT_CLOSE.format(n=n, closing=closing) if closing else None


def catalog(registry: ToolRegistry, budget_chars: int = 6_000,
            budget_tokens: int | None = None) -> str:
    """The tools as the model should first see them, in at most `budget_chars` characters
    and `budget_tokens` tokens, by default a quarter of the characters (counted as the
    model's tokenizer does, see `count_tokens`: names and signatures run to more tokens per
    character than prose)."""
    tools = [t for t in registry if not t.metadata.get("hidden")]
    if not tools:
        return "(no tools)"
    groups = _by_namespace(tools)
    limit = budget_chars // 4 if budget_tokens is None else budget_tokens
    for _ in range(4):
        text = _within(groups, len(tools), budget_chars)
        if len(text) <= limit * _MIN_CHARS_PER_TOKEN:
            break
        tokens = count_tokens(text)
        if tokens <= limit:
            break
        budget_chars = int(budget_chars * limit / tokens * 0.98)
    return text


def _within(groups: list[_Group], total: int, budget_chars: int) -> str:
    text = _full_stubs(groups, int(budget_chars * _FULL_SHARE))
    if text is None:
        text = _one_line_each(groups, budget_chars)
    return text if text is not None else _fair_share(_by_prefix(_by_opening(groups)), total,
                                                     budget_chars)


def _by_namespace(tools: list[Tool]) -> list[_Group]:
    """Top-level tools first, then one group per namespace in order of appearance."""
    groups: dict[str | None, _Group] = {None: _Group("tools", None)}
    for tool in tools:
        ns = tool.namespace
        if ns not in groups:
            groups[ns] = _Group(ns or "tools", ns)
        groups[ns].tools.append(tool)
    return [g for g in groups.values() if g.tools]


def _by_prefix(groups: list[_Group]) -> list[_Group]:
    """Top-level tools split further by a shared first word (`github_...`), so a large flat
    set still shows its structure. Tools that share an opening stay together."""
    out: list[_Group] = []
    for group in groups:
        if group.namespace is not None or group.opening or group.closing:
            out.append(group)
            continue
        by_word: dict[str, list[Tool]] = {}
        for tool in group.tools:
            word = _FIRST_WORD.match(tool.python_name)
            by_word.setdefault(word.group(0).lower() if word else "", []).append(tool)
        rest = _Group("other tools", None, lone=group.lone)
        for first, members in by_word.items():
            if first and len(members) >= _MIN_PREFIX_GROUP and len(members) < len(group.tools):
                out.append(_Group(f"{first}_*", None, members, lone=group.lone))
            else:
                rest.tools += members
        if rest.tools:
            rest.label = "tools" if len(rest.tools) == len(group.tools) else rest.label
            out.append(rest)
    return out


def _by_opening(groups: list[_Group]) -> list[_Group]:
    return [part for group in groups for part in _split(group)]


def _split(group: _Group, closings: bool = False) -> list[_Group]:
    """The group's tools that share an opening (or, if `closings`, only a closing) moved into
    groups of their own, after the rest of it: blocks that end where the group does. A
    closing alone changes no summary: only full stubs, which it would repeat, take it out."""
    if closings not in group.parts:
        group.parts[closings] = _parts(group, closings)
    return group.parts[closings]


def _parts(group: _Group, closings: bool) -> list[_Group]:
    shared = shared_texts(group.tools, closings=closings)
    if not shared:
        return [group]
    lone = {id(o.tools[0]): o.opening for o in shared if len(o.tools) == 1}
    inside = {id(t) for o in shared for t in o.tools if len(o.tools) > 1}
    rest = _Group(group.label, group.namespace,
                  [t for t in group.tools if id(t) not in inside], lone=lone)
    return [rest] * bool(rest.tools) + [
        _Group(group.label, group.namespace, o.tools, o.opening, o.closing)
        for o in shared if len(o.tools) > 1]


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
        for part in _split(group, closings=True):
            shared = len(part.opening) + len(part.closing)
            header = part.header() if (len(part.tools) - 1) * shared > _WORTH else None
            if header is not None:
                new.append(header)
            for tool in part.tools:
                built = ToolStub.of(tool)
                new += [s for s in built.classes.values() if s not in seen]
                seen.update(built.classes.values())  # a shape several tools share: once
                new.append(built.function(header=False, brief=True,
                                          description=part.own(tool) if header else None))
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
            header = part.header()
            if header is not None:
                head.append(header)
            lines_of_part = (_brief_line(t, part) for t in part.tools)
            for line in itertools.chain(head, lines_of_part):  # lazily: may stop early
                used += len(line) + 1
                if used > budget:
                    return None
                lines.append(line)
            head = []
    return "\n".join([*lines, _LINE_HELP])


def _brief_line(tool: Tool, part: _Group) -> str:
    text = part.summary(tool)
    return f"- {ToolStub.of(tool).brief()}" + (f": {text}" if text else "")


def _fair_share(groups: list[_Group], total: int, budget: int) -> str:
    """Every group named with its size; tool lines added one per group per round."""
    footer = _FIND_MORE.format(shown=total, total=total)
    heads = [f"# {g.label} ({_plural(len(g.tools), 'tool')})" + (
        f'; each description begins: "{clip(g.opening, _SHORT_OPENING)}"' if g.opening else "")
        for g in groups]
    tails = [f"  ... and {len(g.tools)} more" for g in groups]  # the longest a tail can be
    room = budget - len(footer) - sum(len(h) + len(t) + 2 for h, t in zip(heads, tails))
    if room < sum(len(_line(g.tools[0], g)) + 1 for g in groups):  # not one each
        return _names_only(groups, total, budget)
    shown: list[list[str]] = [[] for _ in groups]
    progress = True
    while progress:
        progress = False
        for i, group in enumerate(groups):
            n = len(shown[i])
            if n < len(group.tools):
                line = _line(group.tools[n], group)
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


def _line(tool: Tool, group: _Group) -> str:
    text = group.summary(tool, _SHORT_SUMMARY)
    return f"- {tool.qualified_name}" + (f": {text}" if text else "")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


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
