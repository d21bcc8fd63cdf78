"""The documentation's code and figures are real.

Every fenced block in README.md and docs/ is checked here: a Python block either includes an
example (`--8<-- "examples/x.py:section"`, an example that tests/project/test_examples.py
runs) or is run, the blocks of one page in order in one namespace, and a `text title="Output"`
block after it must be what it printed; a bash line must be a make target, an install of
existing extras, a `tooliscode` command its parser takes, or an environment variable the
package reads; a JSON block must parse, and a servers file must load. Every measured figure
must sit beside a `<!-- results: ROW -->` mark and appear in that row of benchmarks/RESULTS.md.
The troubleshooting page must name every error message a user can meet.

Runs on the default runtime only (the outputs shown are the default runtime's).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import io
import json
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomllib
from tooliscode import Limits
from tooliscode.cli import COMMANDS
from tooliscode.mcp import parse_config

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


# -- the blocks ----------------------------------------------------------------------------------

@dataclasses.dataclass
class Block:
    page: Path
    line: int
    lang: str
    info: str
    text: str

    def __str__(self) -> str:
        return f"{_name(self.page)}:{self.line} ({self.lang})"


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_SNIPPET = re.compile(r'^--8<-- "(?P<path>[^":]+)(?::(?P<section>[\w-]+))?"$')


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, their text dedented by their fence's indentation."""
    found, lines, n = [], page.read_text().split("\n"), 0
    while n < len(lines):
        m = _FENCE.match(lines[n])
        if not m:
            n += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        end = next(i for i in range(n + 1, len(lines))
                   if lines[i].strip().startswith(fence) and not lines[i].strip(fence[0]).strip())
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                for line in lines[n + 1:end]]
        found.append(Block(page, n + 1, info.split()[0] if info else "", info, "\n".join(body)))
        n = end + 1
    return found


def every_block() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


def snippets(block: Block) -> list[re.Match[str]] | None:
    """The includes a block consists of, or None when it is code of its own."""
    lines = [line.strip() for line in block.text.strip().split("\n")]
    found = [_SNIPPET.match(line) for line in lines]
    return None if not all(found) else [m for m in found if m]


def test_every_block_is_of_a_kind_that_is_checked() -> None:
    kinds = {"python", "text", "bash", "json"}
    wrong = [str(b) for b in every_block() if b.lang not in kinds]
    assert not wrong, f"blocks of a language nothing checks: {wrong}"
    for page in PAGES:
        previous = None
        for b in blocks(page):
            if b.lang == "text":
                assert b.info == 'text title="Output"' and previous is not None \
                    and previous.lang == "python" and snippets(previous) is None, \
                    f"{b}: a text block is the output of the Python block just before it"
            previous = b


def test_included_examples_are_ones_the_tests_run() -> None:
    ran = (ROOT / "tests" / "project" / "test_examples.py").read_text() + \
        (ROOT / "tests" / "project" / "test_demo.py").read_text()
    for b in every_block():
        for m in (snippets(b) or []) if b.lang == "python" else []:
            path = ROOT / m["path"]
            assert path.parent == ROOT / "examples" and path.is_file(), f"{b}: {m['path']}"
            assert f'"{path.stem}"' in ran or path.name in ran, \
                f"{b}: {m['path']} is not run by tests/project/test_examples.py"
            if m["section"]:
                text = path.read_text()
                assert f"# --8<-- [start:{m['section']}]" in text \
                    and f"# --8<-- [end:{m['section']}]" in text, f"{b}: no {m['section']}"


def _python_pages() -> list[Path]:
    return [p for p in PAGES if any(b.lang == "python" and snippets(b) is None
                                    for b in blocks(p))]


@pytest.mark.parametrize("page", _python_pages(), ids=_name)
def test_python_blocks_run_and_print_what_is_shown(page: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A page's Python blocks run in order in one namespace, in an empty folder, as a reader
    would paste them into one file."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__main__"}
    shown = blocks(page)
    try:
        for n, b in enumerate(shown):
            if b.lang != "python" or snippets(b) is not None:
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(b.text, str(b), "exec", dont_inherit=True), namespace)  # noqa: S102
            after = shown[n + 1] if n + 1 < len(shown) else None
            if after is not None and after.lang == "text":
                assert out.getvalue().rstrip() == after.text.rstrip(), f"{b} printed otherwise"
    finally:
        for value in namespace.values():  # what a block left open, closed as at exit
            close = getattr(value, "close", None)
            if callable(close) and type(value).__module__.startswith("tooliscode"):
                result = close()
                if asyncio.iscoroutine(result):
                    asyncio.run(result)


# -- bash, JSON ----------------------------------------------------------------------------------

def _commands(text: str) -> Iterator[str]:
    for line in re.sub(r"\\\n\s*", " ", text).split("\n"):
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            yield line


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):", text, re.MULTILINE))


def _extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
               ["optional-dependencies"])


def _package_reads(name: str) -> bool:
    return any(name in p.read_text() for p in (ROOT / "core").rglob("*.py"))


def _parses(argv: list[str]) -> None:
    """The `tooliscode` command line parses as `tooliscode` would parse it."""
    from tooliscode.cli._main import _DEFAULT, _parser

    if not argv or argv[0] not in COMMANDS:
        argv = [_DEFAULT, *argv]
    try:
        _parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"tooliscode {shlex.join(argv)} does not parse") from exc


def check_command(line: str) -> None:
    words = shlex.split(line)
    if words[0] == "make":
        assert set(words[1:]) <= _make_targets(), f"no such make target: {line}"
    elif words[:2] == ["pip", "install"]:
        for spec in words[2:]:
            m = re.fullmatch(r"tooliscode(?:\[([\w,-]+)\])?", spec)
            assert m, f"installs something other than tooliscode: {line}"
            assert set((m[1] or "").split(",")) - {""} <= _extras(), f"no such extra: {line}"
    elif words[0] == "tooliscode":
        _parses(words[1:])
    elif words[0] == "export":
        name = words[1].split("=")[0]
        assert _package_reads(name), f"tooliscode reads no {name}: {line}"
    elif words[0] in ("python", ".venv-crewai/bin/python"):
        assert (ROOT / words[1]).is_file(), f"no such file: {line}"
    else:
        raise AssertionError(f"a command the docs test cannot check: {line}")


def test_shell_commands_are_ones_that_work() -> None:
    for b in every_block():
        if b.lang == "bash":
            for line in _commands(b.text):
                check_command(line)


def test_json_blocks_parse_and_servers_files_load(monkeypatch: pytest.MonkeyPatch) -> None:
    for b in every_block():
        if b.lang != "json":
            continue
        data = json.loads(b.text)
        for name, server in data.get("mcpServers", {}).items():
            if server.get("command") == "tooliscode":  # a client's entry for the proxy
                _parses(server["args"])
            else:
                for var in re.findall(r"\$\{(\w+)", json.dumps(server)):
                    monkeypatch.setenv(var, "set")
                parse_config({"mcpServers": {name: server}}, str(b))


# -- the README ----------------------------------------------------------------------------------

def test_the_readme_starts_with_the_two_commands_and_ci_runs_its_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    first = blocks(ROOT / "README.md")[0]
    assert readme.split("\n")[:3] == ["# tooliscode", "", "```bash"]
    commands = list(_commands(first.text))
    assert commands == ["make demo", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.MULTILINE), ".ci/run must run the README's tests"
    assert len(readme.split("\n")) <= 160


def test_the_readme_example_is_ten_lines_and_the_package_check_runs_it() -> None:
    example = next(b for b in blocks(ROOT / "README.md") if b.lang == "python")
    assert len(example.text.strip().split("\n")) <= 10
    assert "README.md" in (ROOT / ".ci" / "installed").read_text()


def test_the_readme_links_to_files_that_exist() -> None:
    """The strict docs build checks the site's links; the README is outside the site."""
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    local = [link for link in links if "://" not in link]
    assert local and all((ROOT / link).exists() for link in local), local


# -- the changelog -------------------------------------------------------------------------------

def test_the_changelog_lists_every_deprecated_import_path_and_when_it_goes() -> None:
    from tooliscode._moved import MOVED, REMOVED_IN

    text = (ROOT / "CHANGELOG.md").read_text()
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert f"## [{version}]" in text
    deprecated = text.split("### Deprecated", 1)[1]
    assert f"removed in {REMOVED_IN}" in deprecated
    for old, (_, public) in MOVED.items():
        assert f"| `{old}` | `{public}` |" in deprecated, old


# -- figures -------------------------------------------------------------------------------------

_MARK = re.compile(r"<!-- results: (.+?) -->")
_MEASURED = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:ms|us|µs|s|min|KB|MB|MiB|GB|GiB|x|%|/s)"
                       r"(?![\w])")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_RUN = re.compile(r"\brun of (\d{4}-\d{2}-\d{2})\b")


def results_rows() -> dict[str, list[str]]:
    """Each figure's label in RESULTS.md, and the rows it labels."""
    rows: dict[str, list[str]] = {}
    for line in RESULTS.read_text().split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and not set(cells[0]) <= set("-"):
            rows.setdefault(cells[0], []).append(line)
    return rows


def prose_units(page: Path) -> Iterator[tuple[int, str, list[str]]]:
    """A page's paragraphs, list items and table rows, without code and marks, each with its
    line and the RESULTS.md rows its marks name."""
    text = page.read_text()
    for b in blocks(page):  # blank out fenced blocks, keeping the line numbers
        lines = text.split("\n")
        end = b.line + len(b.text.split("\n"))
        lines[b.line - 1:end + 1] = [""] * (end + 2 - b.line)
        text = "\n".join(lines)
    unit: list[str] = []
    start = 0
    for n, line in enumerate(text.split("\n") + [""], start=1):
        new = not line.strip() or line.lstrip().startswith(("- ", "|", "#", "* "))
        if new and unit:
            text = " ".join(unit)
            yield start, re.sub(r"`[^`]*`", "", _MARK.sub("", text)), _MARK.findall(text)
            unit = []
        if line.strip():
            if not unit:
                start = n
            unit.append(line.strip())


def test_every_figure_is_from_the_named_run_of_the_benchmarks() -> None:
    rows, results = results_rows(), RESULTS.read_text()
    run = re.search(r"The last run of `make bench` \((\d{4}-\d{2}-\d{2}), commit (\w+)\)", results)
    assert run, "RESULTS.md names its run"
    wrong = []
    for page in PAGES:
        for line, unit, labels in prose_units(page):
            where = f"{_name(page)}:{line}"
            wrong += [f"{where}: the run of {d}, but RESULTS.md is of {run[1]}"
                      for d in _RUN.findall(unit) if d != run[1]]
            if not labels:
                wrong += [f"{where}: {f!r} is a figure without a <!-- results: ROW --> mark"
                          for f in _MEASURED.findall(unit)]
                continue
            for label in labels:
                if label not in rows:
                    wrong.append(f"{where}: RESULTS.md has no row {label!r}")
            source = " ".join(r for label in labels for r in rows.get(label, []))
            for number in _NUMBER.findall(_DATE.sub("", unit)):
                if not re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)", source):
                    wrong.append(f"{where}: {number} is not in RESULTS.md's row(s) {labels}: "
                                 f"{source[:300]}")
    assert not wrong, "\n".join(wrong)


# -- limits --------------------------------------------------------------------------------------

def test_the_limits_table_gives_each_limit_and_its_default() -> None:
    text = (ROOT / "docs" / "limits.md").read_text()
    table = dict(re.findall(r"^\| `(\w+)` \| `([^`]+)` \|", text, re.MULTILINE))
    fields = {f.name: f.default for f in dataclasses.fields(Limits)}
    assert set(table) == set(fields)
    for name, default in fields.items():
        assert eval(table[name]) == default, f"Limits.{name} defaults to {default!r}"  # noqa: S307


# -- troubleshooting -----------------------------------------------------------------------------

_RAISED = {"SnapshotError", "SessionClosed", "RuntimeNotFound", "RuntimeIntegrityError",
           "DataRuntimeMissing", "StoreUnavailable", "LeaseHeld", "ConfigError", "ValueError",
           "TypeError", "ImportError", "RuntimeError", "FileNotFoundError", "TimeoutError",
           "SystemExit", "UserError", "CodeInterpreterError", "ToolIsCodeError", "ApiError",
           "UpstreamError"}
# Where a raise is no message a user meets: the runtimes' plumbing (a failure there is a bug to
# report, and says so as it is), the guest's own code, and checks of the guest's frames.
_INTERNAL = ("core/guest/", "core/runtime/_wasmtime/", "core/runtime/component/_binary.py",
             "core/runtime/component/_interpose.py", "core/runtime/component/_host.py",
             "core/runtime/component/_runtime.py", "core/runtime/component/_guard.py",
             "core/runtime/data/_memory_delta.py", "core/runtime/data/_memory_image.py",
             "core/runtime/data/_image_seeds.py", "core/runtime/data/_commits.py",
             "core/runtime/data/_host_call.py", "core/engine/_frames.py")
_IGNORED = {  # invariants of our own code: meeting one is a bug to report
    "tomllib",  # caught at once, and said as "TOML needs Python 3.11 or later"
    "unreachable", "without checkout", "the commit point is incomplete",
    "only a turn-based guest has a moment between turns",
    "a request must be a JSON object with a string",
}


def _literal(node: ast.expr) -> str:
    """The text of a message, its placeholders as `…`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal(node.left) + _literal(node.right)
    return "…"


def raised_messages() -> list[tuple[str, str]]:
    """(where, message) for every message a user-facing raise gives."""
    found = []
    for path in sorted([*(ROOT / "core").rglob("*.py"), *(ROOT / "integrations").rglob("*.py")]):
        where = str(path.relative_to(ROOT))
        if where.startswith(_INTERNAL):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            func = node.exc.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            args = node.exc.args[1:] if name in ("ApiError", "UpstreamError") and \
                len(node.exc.args) > 1 else node.exc.args
            if name in _RAISED and args:
                message = _literal(args[0])
                if message.strip("… "):
                    found.append((f"{where}:{node.lineno}", message))
    return found


def _fragment(message: str) -> str:
    """The longest run of a message's own words."""
    parts = [p.strip(" :;,.'\"()`") for p in message.split("…")]
    return re.sub(r"\s+", " ", max(parts, key=len).replace("`", ""))


def test_troubleshooting_names_every_error_message() -> None:
    page = (ROOT / "docs" / "troubleshooting.md").read_text().replace("`", "")
    page = re.sub(r"\s+", " ", page.replace("\\|", "|"))
    missing = [f"{where}: {_fragment(message)!r}" for where, message in raised_messages()
               if _fragment(message) not in page
               and not any(ignored in _fragment(message) for ignored in _IGNORED)]
    assert not missing, "not in docs/troubleshooting.md:\n" + "\n".join(missing)


if __name__ == "__main__":  # print the messages, to write the page
    for where, message in raised_messages():
        print(f"{where}\t{_fragment(message)}")
    sys.exit(0)
