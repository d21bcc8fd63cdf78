"""SDK generation: JSON Schema -> typed stubs, over a corpus of real-world tool schemas.

The expected stubs and catalogs are committed under tests/golden/expected/; tests/golden/refresh.py
rewrites them. Each stub must also compile and resolve inside the real guest, and calls made
with arguments its schema allows must pass the guest's checks, while a field of the wrong
type must be stopped in the guest with its path named.
"""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest
from golden.examples import breakages, example
from golden.refresh import (
    CATALOGS,
    EXPECTED,
    LIVE,
    SCHEMAS,
    catalog_texts,
    corpora,
    corpus_tools,
    expected_text,
    live_tools,
)
from tooliscode import Limits, Session, Tool, ToolRegistry
from tooliscode.tools._stubs import ToolStub, guest_spec, stub

CORPORA = corpora()


def test_the_corpus_is_broad():
    assert {"mcp_time", "mcp_git", "mcp_filesystem", "github", "openai", "nested"} <= set(CORPORA)
    assert sum(len(corpus_tools(c)) for c in CORPORA) >= 50


@pytest.mark.parametrize("corpus", CORPORA)
def test_stubs_match_the_golden_files(corpus):
    expected = (EXPECTED / f"{corpus}.txt").read_text()
    assert expected_text(corpus) == expected, (
        f"stubs for {corpus} changed: run tests/golden/refresh.py and read the diff")


def test_catalogs_match_the_golden_files():
    """What the model reads of each tool set; a change here is one for every model call."""
    made = catalog_texts()
    assert sorted(made) == sorted(p.stem for p in CATALOGS.glob("*.txt"))
    for name, text in made.items():
        assert text == (CATALOGS / f"{name}.txt").read_text(), (
            f"the catalog of {name} changed: run tests/golden/refresh.py and read the diff")


@pytest.mark.parametrize("corpus", LIVE)
def test_live_corpora_are_what_the_installed_servers_list(corpus):
    stored = json.loads((SCHEMAS / f"{corpus}.json").read_text())
    assert asyncio.run(live_tools(corpus)) == stored


def _validator(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def _echo(**arguments):
    return arguments


def _all_tools() -> list[Tool]:
    tools = [t for c in CORPORA for t in corpus_tools(c)]
    for t in tools:
        t.function = _echo
    return tools


@pytest.fixture(scope="module")
def corpus_session():
    with Session(_all_tools(), limits=Limits(timeout_s=60)) as s:
        yield s


CHECK_STUBS = """
import json, typing, inspect, sys, types
failures = []
for qualified, source in json.load(open("stubs.json")).items():
    module = sys.modules["stub"] = types.ModuleType("stub")  # TypedDict resolves names there
    ns = module.__dict__
    ns.update(Any=typing.Any, Literal=typing.Literal, NotRequired=typing.NotRequired,
              TypedDict=typing.TypedDict)
    try:
        exec(compile("from __future__ import annotations\\n" + source, qualified, "exec"), ns)
        fn = ns[qualified.rpartition(".")[2]]
        for obj in list(ns.values()):
            if isinstance(obj, typing.TypeAliasType):
                obj.__value__
            elif typing.is_typeddict(obj) or obj is fn:
                typing.get_type_hints(obj, ns, include_extras=True)
        tool = eval(qualified)
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind is not p.VAR_KEYWORD]
        assert [p.name for p in params] == tool._params, (qualified, params, tool._params)
        shown = any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
        # `name()` for a schema without keys still passes keywords on (JSON Schema allows them)
        assert (shown or not params) if tool._open else not shown, qualified
    except Exception as exc:
        failures.append(f"{qualified}: {type(exc).__name__}: {exc}")
failures
"""


def test_every_stub_compiles_and_resolves_in_the_guest(corpus_session):
    registry = ToolRegistry(_all_tools())
    stubs = {t.qualified_name: ToolStub.of(t).source(header=False) for t in registry}
    corpus_session.write_file("stubs.json", json.dumps(stubs))
    r = corpus_session.run(CHECK_STUBS)
    assert r.ok, r.error
    assert r.value == "[]", r.value


def _python_call(tool: Tool, arguments: dict) -> dict:
    """The keyword arguments the model writes for `arguments` (keys -> parameter names)."""
    names = {key: name for name, key in guest_spec(tool)["keys"].items()}
    return {names.get(k, k): v for k, v in arguments.items()}


def _shown(tool: Tool, path: tuple) -> str:
    names = {key: name for name, key in guest_spec(tool)["keys"].items()}
    return names.get(path[0], path[0]) + "".join(f"[{p!r}]" for p in path[1:])


RUN_CASES = """
import json
outcomes = []
for qualified, kwargs, expect_ok, where in json.load(open("cases.json")):
    try:
        got = eval(qualified)(**kwargs)
        outcomes.append(["ok", got])
    except ToolError as exc:
        outcomes.append(["error", str(exc), isinstance(exc, TypeError)])
json.dump(outcomes, open("outcomes.json", "w"))
"""


def test_allowed_arguments_pass_and_wrong_types_are_named_in_the_guest(corpus_session):
    cases, expected = [], []
    for tool in ToolRegistry(_all_tools()):
        schema = tool.parameters
        check = _validator(schema)
        for full in (False, True):
            arguments = example(schema, full=full)
            assert check.is_valid(arguments), (tool.name, arguments)  # the generator is right
            cases.append([tool.qualified_name, _python_call(tool, arguments), True, ""])
            expected.append(arguments)
        for path, broken in breakages(schema, example(schema, full=True)):
            if check.is_valid(broken):
                continue  # the schema allows that type there too (a union): nothing to catch
            cases.append([tool.qualified_name, _python_call(tool, broken), False,
                          _shown(tool, path)])
            expected.append(None)
    assert sum(1 for c in cases if not c[2]) >= 100  # enough broken fields to mean something
    corpus_session.write_file("cases.json", json.dumps(cases))
    r = corpus_session.run(RUN_CASES)
    assert r.ok, r.error
    outcomes = json.loads(corpus_session.read_file("outcomes.json"))
    for (qualified, _, ok, where), want, got in zip(cases, expected, outcomes):
        if ok:
            assert got == ["ok", want], (qualified, got)
        else:
            assert got[0] == "error" and got[2], (qualified, where, got)
            assert f"{qualified}(): {where} must be" in got[1], (where, got[1])
    assert len(r.tool_calls) == sum(1 for c in cases if c[2])  # broken calls never left


def test_keyword_and_positional_arguments_bind_alike(corpus_session):
    r = corpus_session.run(
        "a = github.create_issue('o', 'r', 'title', None, ['me'])\n"
        "b = github.create_issue(owner='o', repo='r', title='title', assignees=['me'])\n"
        "c = set_headers('f', 'k', user_name='u', a_b=1, a_b_2=2)\n"
        "a == b, a, c")
    assert r.ok, r.error
    assert r.value == ("(True, {'owner': 'o', 'repo': 'r', 'title': 'title', 'assignees': ['me']}, "
                       "{'from': 'f', 'x-api-key': 'k', 'user name': 'u', 'a_b': 1, 'a-b': 2})")


def test_none_for_an_optional_parameter_means_not_given(corpus_session):
    r = corpus_session.run("github.list_issues('o', 'r', state=None, page=2)")
    assert r.value == "{'owner': 'o', 'repo': 'r', 'page': 2}", r.error
    r = corpus_session.run("create_order(1, [{'sku': 'a'}], {'street': 's', 'city': 'c', "
                           "'country': 'NL'}, {'kind': 'card', 'token': 't'}, billing=None)")
    assert r.ok and "'billing': None" in r.value, r.error  # the schema allows null: sent


def test_guest_errors_name_nested_fields_and_suggest(corpus_session):
    r = corpus_session.run("fs.edit_file('a.txt', [{'oldText': 'x', 'new_text': 'y'}])")
    assert not r.ok and r.error_type == "ToolArgumentError"
    assert "fs.edit_file(): edits[0] has an unexpected key 'new_text'; did you mean " \
           "'newText'?" in r.error
    r = corpus_session.run("github.list_issues('o', 'r', state='opened')")
    assert "state must be one of 'open', 'closed', 'all', not 'opened'; did you mean 'open'?" \
        in r.error
    r = corpus_session.run("query_records('t', where={'and': [{'field': 'a', 'op': 'eq', "
                           "'value': 1}, {'field': 'b', 'op': 'like', 'value': 'x'}]})")
    assert "where['and'][1]['op'] must be one of" in r.error, r.error
    r = corpus_session.run("github.search_code('x', per_page=500)")
    assert "per_page must be <= 100, not 500" in r.error
    r = corpus_session.run("try:\n    fs.write_file(path=1, content='x')\nexcept ToolError as e:\n"
                           "    caught = (type(e).__name__, isinstance(e, TypeError))\ncaught")
    assert r.value == "('ToolArgumentError', True)"


def test_the_host_still_rejects_what_the_guest_would(corpus_session):
    """Guest checks are for early errors; a call that skips them meets the host's rules."""
    r = corpus_session.run("from tooliscode_guest.tools import call_tool\n"
                           "try:\n    call_tool('no_such_tool', {})\nexcept ToolError as e:\n"
                           "    a = str(e)\n"
                           "try:\n    call_tool('send_email', [1, 2])\nexcept ToolError as e:\n"
                           "    b = str(e)\na, b")
    assert r.ok, r.error
    assert "there is no tool 'no_such_tool'" in r.value and "must be an object" in r.value


def test_output_schema_gives_the_return_type():
    [current, convert] = corpus_tools("mcp_time")
    assert "-> TimeResult:" in stub(current) and "class TimeResult(TypedDict):" in stub(current)
    assert ToolStub.of(convert).returns == "TimeConversionResult"
    assert ToolStub.of(Tool(name="t")).returns == "Any"
