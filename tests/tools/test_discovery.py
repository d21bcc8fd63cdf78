"""Discovery: search_tools and help inside the sandbox, did-you-mean for names, and the
catalog that fits any tool set into a fixed budget."""

from __future__ import annotations

import pytest
from golden.refresh import corpus_tools
from golden.synthetic import boilerplate_tools, synthetic_tools
from tooliscode import Limits, Session, Tool, ToolRegistry
from tooliscode.prompt import catalog, instructions

REAL = [t for c in ("mcp_time", "mcp_git", "mcp_filesystem", "github", "openai")
        for t in corpus_tools(c)]
BIG = ToolRegistry(REAL + synthetic_tools(1000))


@pytest.fixture(scope="module")
def session():
    with Session(REAL, limits=Limits(timeout_s=30)) as s:
        yield s


@pytest.mark.parametrize("query, first", [
    ("edit a text file", "fs.edit_file"),
    ("merge pull request", "github.merge_pull_request"),
    ("current time in a timezone", "get_current_time"),
    ("weather", "get_weather"),
    ("stock price", "get_stock_price"),
    ("commit log", "git_log"),
    ("find the tool to send an email", "send_email"),
])
def test_search_ranks_by_name_and_description(query, first):
    assert BIG.search(query, limit=5)[0].qualified_name == first


def test_search_prefers_the_name_and_namespace():
    found = BIG.search("slack messages", limit=8)
    assert len(found) == 8
    assert all(t.namespace == "slack" and t.name.endswith("_messages") for t in found)


def test_search_matches_word_forms_and_prefixes():
    assert all("issues" in t.name for t in BIG.search("issue", 10))  # one stem for both
    assert {t.namespace for t in BIG.search("calend", 5)} == {"calendar_"}  # a prefix
    assert BIG.search("zzzz") == [] and BIG.search("", 5) == []
    assert len(BIG.search("list", limit=7)) == 7


def test_search_tools_in_the_sandbox(session):
    r = session.run("found = search_tools('pull request review', limit=2)\n"
                    "print(found)\n[f['name'] for f in found]")
    assert r.ok, r.error
    assert r.value == "['github.create_pull_request_review', 'github.merge_pull_request']"
    assert r.stdout.splitlines()[0].startswith(
        "github.create_pull_request_review(owner: str, repo: str, pull_number: float, body: str,")
    assert r.stdout.splitlines()[0].endswith("= None): Create a review on a pull request")
    r = session.run("search_tools('qqqq zzzz')")
    assert r.value == "[] (no tool matched; try other words)"


def test_search_summarises_each_tool_from_its_own_text():
    with Session(REAL + boilerplate_tools(), limits=Limits(timeout_s=30)) as s:
        r = s.run("print(search_tools('purchase order', limit=2))")
    assert sorted(r.stdout.splitlines()) == [
        "erp.approve_purchase_order(id: str): Approves a pending purchase order.",
        "erp.create_purchase_order(id: str): Creates a purchase order for a supplier."]


def test_help_prints_the_full_stub(session):
    r = session.run("help(fs.edit_file)")
    assert r.stdout.startswith("class EditFileEditsItem(TypedDict):\n    oldText: str  # Text")
    assert "# fs.edit_file\ndef edit_file(path: str, edits: list[EditFileEditsItem], " \
           "dryRun: bool = False) -> Any:" in r.stdout
    assert session.run("help('fs.edit_file')").stdout == r.stdout
    assert "def get_current_time(timezone: str) -> TimeResult:" in session.run(
        "help('get_current_time')").stdout
    assert session.run("help(len)").stdout.startswith("Help on built-in function len")
    assert session.run("help('fs.edit_fil')").stdout.startswith(
        "there is no tool 'fs.edit_fil'; did you mean 'fs.edit_file'")
    listing = session.run("help(github)").stdout
    assert listing.count("def ") == 9 and "def merge_pull_request(" in listing
    assert session.run("print(repr(github.search_code))").stdout == (
        "<tool github.search_code(q: str, order: Literal['asc', 'desc'] | None = None, "
        "page: float | None = None, per_page: float | None = None) -> Any>\n")


def test_unknown_names_raise_name_error_with_a_suggestion(session):
    r = session.run("get_curent_time('UTC')")
    assert r.error_type == "NameError"
    assert "name 'get_curent_time' is not defined. Did you mean: 'get_current_time'?" in r.error
    r = session.run("edit_file('a', [])")
    assert "name 'edit_file' is not defined. Did you mean: 'fs.edit_file'?" in r.error
    r = session.run("search_code('x')")  # Python alone would suggest search_tools
    assert "name 'search_code' is not defined. Did you mean: 'github.search_code'?" in r.error
    r = session.run("merge_pull_requests(1)")
    assert "is not defined. Did you mean: " in r.error and "'github.merge_pull_request'" in r.error
    r = session.run("github.search_cod('x')")
    assert r.error_type == "AttributeError"
    last = r.error.rstrip().splitlines()[-1]  # the suggestion is worded by the guest's CPython
    assert last.startswith("AttributeError: github has no tool 'search_cod'. Did you mean")
    assert "'search_code'" in last or "'.search_code'" in last


@pytest.mark.parametrize("n", [1, 14, 40, 100, 300, 1000])
@pytest.mark.parametrize("budget", [1_500, 6_000])
def test_the_catalog_keeps_its_budget(n, budget):
    tools = (REAL + synthetic_tools(1000))[:n]
    text = catalog(ToolRegistry(tools), budget)
    assert len(text) <= budget
    assert all(t.python_name in text for t in tools[:1])  # the first tool is always named


def test_small_sets_get_full_stubs_large_ones_a_grouped_list():
    small = catalog(ToolRegistry(corpus_tools("mcp_time")))
    assert "class TimeResult(TypedDict):" in small and '"""Convert time between timezones' in small
    medium = catalog(ToolRegistry(corpus_tools("github") + corpus_tools("openai")
                                  + corpus_tools("mcp_git")), 4_000)
    assert "- get_weather(location: str, units: Literal['celsius', 'fahrenheit'] | None): " \
           "Retrieves current weather for the given location." in medium
    assert "# github: call as github.<name>(...)" in medium
    large = catalog(BIG)
    assert len(large) <= 6_000 and len(large) / 4 <= 1_500
    assert "# gitlab (40 tools)" in large and "# github (9 tools)" in large
    assert "# confluence (40 tools)" in large
    assert "- fs.read_text_file: Read the complete contents of a file from the file system as " \
           "text." in large
    assert large.endswith("Find the others with search_tools('words'); help(name) prints one "
                          "in full.")


def test_flat_sets_are_grouped_by_their_shared_first_word():
    text = catalog(ToolRegistry(synthetic_tools(300, namespaced=False)))
    assert "# gitlab_* (12 tools)" in text
    assert "- gitlab_list_issues: List issues in Gitlab." in text


def test_instructions_carry_the_catalog():
    registry = ToolRegistry([Tool(name="ping", description="Answer pong.")])
    text = instructions(registry)
    assert text.endswith('def ping():\n    """Answer pong."""')  # no return type that says nothing
