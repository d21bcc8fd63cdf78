"""The catalog tells real tools apart: text that a group's descriptions share (openings of one
or several sentences, with "e.g." and "etc." inside, a label such as "Tool description:", a
closing note) is shown once as the group's header, and each tool is summarised from its own
text, in every form the catalog takes."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from golden.refresh import corpus_tools
from golden.synthetic import (
    ALLOWED_CLOSING,
    BOILERPLATE,
    CLOSING_ACTIONS,
    ERP_ACTIONS,
    FS_ACTIONS,
    FS_OPENING,
    FS_SHORT,
    FS_SHORT_OPENING,
    TICKET_ACTIONS,
    TICKET_CLOSING,
    boilerplate_tools,
    closing_tools,
    file_system_tools,
    synthetic_tools,
    ticket_tools,
)
from tooliscode import Tool, ToolRegistry
from tooliscode.prompt import catalog
from tooliscode.tools import shared_texts, stub, summary

REAL = [t for c in ("mcp_time", "mcp_git", "mcp_filesystem", "github", "openai")
        for t in corpus_tools(c)]
_SENTENCE = re.compile(r"(?<!e\.g)(?<!etc)\.\s+(?=[A-Z])")


def _first_sentence(text: str) -> str:
    return _SENTENCE.split(text, maxsplit=1)[0].rstrip(".") + "."


def _erp_own(name: str) -> str:
    return ERP_ACTIONS[name]  # the closing note is shared: not the tool's own


SETS = {
    # name: (tools, own text by tool name, a text they share: written once in full stubs,
    # at most once in the other forms)
    "file system": (file_system_tools, FS_ACTIONS, FS_OPENING),
    "tickets": (ticket_tools, TICKET_ACTIONS, TICKET_CLOSING),
    "erp": (boilerplate_tools, ERP_ACTIONS, BOILERPLATE),
    "closing only": (closing_tools, CLOSING_ACTIONS, ALLOWED_CLOSING),
}


def _close_paren(line: str, at: int) -> int:
    depth = 0
    for i in range(at, len(line)):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(line[i], 0)
        if depth == 0:
            return i
    return len(line)


def listed(text: str) -> list[tuple[int, str, str]]:
    """(group, name, what the catalog says of it) for each tool, in order: a `# ` line starts
    a group; a `def` gives its docstring, a `- name(...): summary` line its summary."""
    out: list[tuple[int, str, str]] = []
    group = 0
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("# "):
            group += 1
        elif line.startswith("def "):
            name = line[4:].partition("(")[0]
            doc = lines[i + 1].strip() if i + 1 < len(lines) else ""
            out.append((group, name.rstrip("_"), doc.removeprefix('"""').removesuffix('"""')))
        elif line.startswith("- "):
            name = re.match(r"[\w.]+", line[2:]).group(0)
            rest = line[2 + len(name):]
            if rest.startswith("("):
                rest = rest[_close_paren(rest, 0) + 1:]
            rest = re.sub(r"^ -> [^:]+", "", rest)
            out.append((group, name.rpartition(".")[2].rstrip("_"), rest.removeprefix(": ")))
    return out


def _forms(tools: list[Tool]) -> dict[str, str]:
    """The catalog of `tools` in each of its forms, found by shrinking the budget."""
    registry = ToolRegistry(tools)
    full = catalog(registry, 100_000, 100_000)
    assert full.startswith(("def ", "# ", "class ")) and '"""' in full
    one_line = catalog(registry, len(full) - 1, 100_000)
    assert "\n- " in one_line and "Listed " not in one_line, one_line
    fair = catalog(registry, len(one_line) - 1, 100_000)
    assert "Listed " in fair
    return {"full stubs": full, "one line each": one_line, "fair share": fair}


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("with_others", [False, True])
def test_each_tool_is_summarised_from_its_own_text(name, with_others):
    make, own, shared = SETS[name]
    tools = make() + (REAL if with_others else [])
    for form, text in _forms(tools).items():
        seen = [(g, n, said) for g, n, said in listed(text) if n in own]
        assert len(seen) >= (2 if form == "fair share" else len(own)), (form, text)
        for _, n, said in seen:
            expected = own[n] if form == "full stubs" else _first_sentence(own[n])
            cut = said.endswith("…") and expected.startswith(said[:-1])  # clipped to fit
            assert said == expected or cut, (form, n, said)
        assert text.count(shared) == 1 if form == "full stubs" else text.count(shared) <= 1
        if with_others:  # the unrelated tools are listed as before
            assert "get_weather" in text and "Retrieves current weather" in text


@pytest.mark.parametrize("name", SETS)
def test_no_two_tools_of_a_group_share_a_summary(name):
    make, own, _ = SETS[name]
    for form, text in _forms(make() + REAL).items():
        by_group: dict[tuple[int, str], str] = {}
        for group, n, said in listed(text):
            other = by_group.setdefault((group, said), n)
            mine = own.get(n) or n
            assert other == n or (own.get(other) or other) == mine, (form, n, other, said)


def test_a_group_may_hold_only_most_of_the_tools_that_begin_alike():
    """16 of 18 share two sentences and a label; 2 share only the first sentence and the
    label: each part gets its own header, and every summary is the tool's own."""
    found = {tuple(t.name for t in s.tools): (s.opening, s.closing)
             for s in shared_texts(file_system_tools())}
    full = tuple(n for n in FS_ACTIONS if n not in FS_SHORT)
    short = tuple(n for n in FS_ACTIONS if n in FS_SHORT)
    assert found == {full: (FS_OPENING, ""), short: (FS_SHORT_OPENING, "")}
    text = catalog(ToolRegistry(file_system_tools()))
    assert text.count("This tool belongs to the Harbor file system.") == 2  # two headers
    assert text.count("Tool description:") == 2


def test_openings_labels_and_closings():
    def tool(name, description):
        return Tool(name=name, description=description)

    tools = [tool("a", "Part of X. Lists things, e.g. files. More."),
             tool("b", "Part of X. Deletes a thing."),
             tool("c", "Lists users."),
             tool("d", "Part of X."),
             tool("e", "Part of Y. Uses Y, etc. Reads. Logged."),
             tool("f", "Part of Y. Uses Y, etc. Writes. Logged."),
             tool("g", ""),
             tool("h", "Store API: Gets a row."),
             tool("i", "Store API: Puts a row."),
             tool("j", "Gets a key. See the docs."),
             tool("k", "Puts a key. See the docs.")]
    found = [(o.opening, o.closing, [t.name for t in o.tools]) for o in shared_texts(tools)]
    assert found == [("Part of X.", "", ["a", "b", "d"]),
                     ("Part of Y. Uses Y, etc.", "Logged.", ["e", "f"]),
                     ("Store API:", "", ["h", "i"]),
                     ("", "See the docs.", ["j", "k"])]
    assert [summary(t, opening="Part of X.") for t in tools[:4]] == [
        "Lists things, e.g. files.", "Deletes a thing.", "Lists users.", ""]
    assert summary(tools[4], 10, "Part of Y. Uses Y, etc.", "Logged.") == "Reads."
    assert summary(tools[7], opening="Store API:") == "Gets a row."
    assert summary(tool("z", "Word " * 40), 20) == "Word Word Word…"
    assert shared_texts(tools, closings=False)[-1].opening == "Store API:"  # no closing group
    # two tools with the same whole description keep their last sentence as their own
    same = [tool("p", "Shared. Same."), tool("q", "Shared. Same.")]
    assert [(o.opening, summary(o.tools[0], opening=o.opening)) for o in shared_texts(same)] \
        == [("Shared.", "Same.")]


def test_full_stubs_write_a_shared_text_once_and_each_docstring_its_own():
    text = catalog(ToolRegistry(ticket_tools() + closing_tools()))
    assert text.count("Ticket API:") == 1 and text.count(TICKET_CLOSING) == 1
    assert text.count(ALLOWED_CLOSING) == 1
    assert '# The next 8 tools\' descriptions begin "Ticket API:" and end "' \
           f'{TICKET_CLOSING}"' in text
    assert f'# The next 4 tools\' descriptions end "{ALLOWED_CLOSING}"' in text
    assert 'def close_ticket(id: int | None = None):\n    """Close a ticket."""' in text
    # help() still shows each tool in full
    assert f"Ticket API: Close a ticket. {TICKET_CLOSING}" in stub(ticket_tools()[2])


def test_a_short_shared_text_is_not_worth_a_header_in_full_stubs():
    text = catalog(ToolRegistry([Tool(name="a", description="Get. A thing."),
                                 Tool(name="b", description="Get. B thing.")]))
    assert "# " not in text and '"""Get. A thing."""' in text


@pytest.mark.parametrize("namespace", ["erp", None])
@pytest.mark.parametrize("others, budget", [
    (("openai", "mcp_time"), 6_000),
    (("openai", "mcp_time", "github", "mcp_git"), 2_500),  # a fair share per group
    (("openai", "mcp_time", "github", "mcp_git", "mcp_filesystem"), 1_500),
])
def test_a_shared_opening_is_shown_once_among_other_tools(namespace, others, budget):
    tools = [t for c in others for t in corpus_tools(c)] + boilerplate_tools(namespace)
    text = catalog(ToolRegistry(tools), budget)
    assert len(text) <= budget and ("Listed " in text) == (budget < 6_000)  # the form meant
    assert text.count("This tool belongs to the Acme ERP system.") == 1, text
    assert BOILERPLATE in text
    said = {n: s for _, n, s in listed(text) if n in ERP_ACTIONS}
    assert len(said) >= 2
    assert all(s == _erp_own(n) for n, s in said.items()), said
    assert "get_weather" in text  # the unrelated tools are listed as before


def test_in_a_huge_set_a_shared_opening_heads_its_group():
    text = catalog(ToolRegistry(boilerplate_tools() + REAL + synthetic_tools(1000)))
    assert len(text) <= 6_000
    assert f'# erp (12 tools); each description begins: "{BOILERPLATE[:60]}' in text
    assert "- erp.create_purchase_order: Creates a purchase order for a supplier." in text
    assert text.count("Acme ERP") == 1


def test_a_catalog_well_within_its_budget_loads_no_tokenizer():
    """Counting tokens loads bpe-openai, a second's work: a new process that builds a small
    catalog must not wait for it (a resume in a new process did, 950 ms)."""
    code = ("import sys\nfrom tooliscode import Tool, ToolRegistry\n"
            "from tooliscode.prompt import catalog\n"
            "text = catalog(ToolRegistry([Tool(name='get_order', description='One order.')]))\n"
            "print('get_order' in text, 'bpe_openai' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == ["True", "False"], done.stdout + done.stderr
