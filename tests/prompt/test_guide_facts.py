"""The guide is short; what it leaves out reaches the model where it applies. One test per row
of the README's table "each fact, and where the model meets it"."""

from __future__ import annotations

import json

import pytest
from golden.synthetic import FS_OPENING, file_system_tools, synthetic_tools
from tooliscode import Limits, Session, ToolError, ToolIsCode, ToolRegistry
from tooliscode.prompt import (
    FIGURES_NOTE,
    LLM_QUERY_NOTE,
    catalog,
    count_tokens,
    instructions,
    render,
)
from tooliscode.prompt._guide import _GUIDE
from tooliscode.runtime import python_note

GUIDE_TOKENS = 120
CODE_TOOL_TOKENS = 70


def get_user(user_id: str) -> dict:
    """One user by id."""
    if user_id == "ghost":
        raise ToolError("no user 'ghost'")
    return {"id": user_id, "name": f"user {user_id}", "team": "ops"}


@pytest.fixture(scope="module")
def session():
    with Session([get_user] + file_system_tools(),
                 limits=Limits(timeout_s=60, output_chars=500)) as s:
        yield s


def said(session: Session, code: str) -> str:
    """What the model reads after `code`."""
    return render(session.run(code))


def test_the_guide_is_short_and_says_what_is_needed_before_the_first_cell():
    for runtime in ("default", "data"):
        guide = instructions(ToolRegistry([]), python=python_note(runtime)).rpartition(
            "\n\n")[0]  # without the catalog
        assert count_tokens(guide) <= GUIDE_TOKENS, (runtime, count_tokens(guide))
        for fact in (python_note(runtime), "persist", "/session", "functions",
                     "print only what you need", "asyncio.gather", "final_answer(value)"):
            assert fact in guide
    with ToolIsCode([get_user]) as tic:
        assert count_tokens(json.dumps(tic.tools)) <= CODE_TOOL_TOKENS
        assert tic.instructions.startswith(_GUIDE.format(name="run_python",
                                                         python=python_note(None)))


def test_help_shows_a_tool_in_full(session):
    # where the catalog does not show every tool in full, its last line says so
    assert catalog(ToolRegistry(synthetic_tools(60)), 3_000).endswith(
        "help(name) prints one in full.")
    assert catalog(ToolRegistry(synthetic_tools(40)), 5_000).endswith(
        "help(name) prints a tool's types and full documentation.")
    # a call with the wrong arguments is told where the parameters are
    text = said(session, "get_user(id='7')")
    assert "unexpected keyword argument 'id'" in text
    assert text.endswith("[sandbox] help(get_user) prints the tool in full: its parameters "
                         "and what they mean.")
    # and help prints the text the catalog wrote once for the group
    shown = " ".join(said(session, "help(wc)").split())
    assert f"{FS_OPENING} Count the lines" in shown


def test_search_tools_finds_tools(session):
    assert "Find the others with search_tools('words')" in catalog(
        ToolRegistry(synthetic_tools(300)))
    assert said(session, "help()") == "help(tool) shows a tool; search_tools('words') finds tools."
    assert said(session, "print(search_tools('count lines', 1))").startswith("wc(")


def test_the_first_failed_call_names_tool_error():
    with Session([get_user]) as s:
        first = said(s, "get_user('ghost')")
        assert "ToolError: no user 'ghost'" in first
        assert first.endswith("[sandbox] A failed tool call raises `ToolError`; `except "
                              "ToolError as e:` catches it.")
        assert "[sandbox]" not in said(s, "get_user('ghost')")  # said once
        assert said(s, "try:\n    get_user('ghost')\nexcept ToolError as e:\n    print('caught', e)"
                    ) == "caught no user 'ghost'"


def test_a_tool_call_not_awaited_in_async_code_gets_an_error_saying_so(session):
    used = said(session, "async def first():\n    users = [get_user(str(i)) for i in range(2)]\n"
                         "    return users[0]['name']\nawait first()")
    assert "write `await get_user(...)` to get its value" in used
    dumped = said(session, "import asyncio, json\nusers = [get_user(str(i)) for i in range(2)]\n"
                           "await asyncio.sleep(0)\njson.dumps(users)")
    assert "not JSON serializable" in dumped and "write `await tool(...)`" in dumped
    forgotten = said(session, "async def count():\n    users = [get_user(str(i)) for i in "
                              "range(3)]\n    return len(users)\nprint(await count())")
    assert forgotten.startswith("3\n[stderr]\nRuntimeWarning: 3 tool calls made in async code "
                                "were never awaited, so their results were lost (get_user(...)).")
    # awaited, gathered or used at once: no warning
    fine = said(session, "import asyncio\nasync def names():\n    one = get_user('1')['name']\n"
                         "    rest = await asyncio.gather(*[get_user(str(i)) for i in range(2)])\n"
                         "    return [one] + [u['name'] for u in rest]\nprint(await names())")
    assert fine == "['user 1', 'user 0', 'user 1']"


def test_a_cut_output_says_where_the_full_text_is(session):
    text = said(session, "print('\\n'.join(f'line {i}' for i in range(400)))")
    note = text.splitlines()[0]
    assert note.startswith("[note] stdout was ") and "characters were cut" not in note
    path = note.partition("The full text is in ")[2].partition(";")[0]
    assert path.startswith("/session/") and "read or search it in the next cell" in note
    assert said(session, f"print(open({path!r}).read().count('line'))") == "400"


def test_a_silent_cell_is_told_so_with_the_shape_of_what_it_defined(session):
    text = said(session, "users = [get_user(str(i)) for i in range(3)]\none = users[0]")
    assert text == ("(the cell ran and printed nothing; it defined: one = dict of 3 keys ('id', "
                    "'name', 'team'), users = list of 3 items, the first a dict of 3 keys ('id', "
                    "'name', 'team'))")
    assert said(session, "one['name']") == "[value] 'user 0'"  # a last expression's value


def test_the_sandbox_rules_are_named_when_the_code_meets_them(session):
    net = said(session, "import socket\nsocket.create_connection(('example.com', 80))")
    assert "[sandbox] There is no network in this sandbox" in net
    outside = said(session, "open('/etc/passwd').read()")
    assert "[sandbox] Only /session (the working directory) is visible" in outside


def test_conditional_guide_lines_come_only_where_they_apply():
    registry = ToolRegistry([get_user])
    assert FIGURES_NOTE in instructions(registry, python=python_note("data"))
    assert FIGURES_NOTE not in instructions(registry, python=python_note("default"))
    with ToolIsCode([get_user], llm=lambda prompt: "ok") as tic:
        assert LLM_QUERY_NOTE in tic.instructions
    with ToolIsCode([get_user]) as tic:
        assert "llm_query" not in tic.instructions
