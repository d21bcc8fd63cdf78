"""The package's shape: the layers hold, the public surface is what the README teaches, and
the import paths of earlier releases still work while they warn."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
        "sys.exit(lint_imports_command())"]


def _lint(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = None
    if pythonpath is not None:
        import os

        env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([*LINT, "--no-cache"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_layers_and_the_guest_contracts_hold():
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" not in done.stdout.lower().split("contracts:")[-1].split("kept")[0]


@pytest.mark.parametrize("module, line", [
    ("tools/_tool.py", "from ..cli import main  # an upward import"),
    ("runtime/default/_runtime.py", "from ..data import DataRuntime  # one runtime on the other"),
    ("guest/convert.py", "from ..errors import ToolError  # the guest reaching the host"),
])
def test_the_contracts_fail_on_an_import_against_them(tmp_path, module, line):
    """The check is real: the same tree with one import against a contract fails it."""
    tree = tmp_path / "tooliscode"
    shutil.copytree(ROOT / "core", tree, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tree / module
    text = target.read_text()
    head, sep, rest = text.partition("\nfrom __future__ import annotations\n")
    target.write_text(head + sep + line + "\n" + rest if sep else line + "\n" + text)
    done = _lint(tmp_path, pythonpath=tmp_path)
    assert done.returncode != 0, done.stdout
    assert "BROKEN" in done.stdout


def _readme_imports() -> list[tuple[str, list[str]]]:
    """Every `from tooliscode... import names` and `import tooliscode...` in the README's and
    the documentation's code, and every `tooliscode.path.Name` they name in their text."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    text = "\n".join(page.read_text() for page in pages)
    found: list[tuple[str, list[str]]] = []
    for module, names in re.findall(r"from (tooliscode[\w.]*) import ([\w, ]+)", text):
        found.append((module, [n.strip() for n in names.split(",") if n.strip()]))
    for dotted in re.findall(r"`(tooliscode(?:\.\w+)+)", text):
        module, _, name = dotted.rpartition(".")
        found.append((module, [name]) if name[:1].isupper() else (dotted, []))
    return found


OWN_ENVIRONMENT = {"tooliscode.integrations.crewai": "crewai"}
"""Adapters whose framework lives in an environment of its own (see the Makefile): their
README names are checked there, by tests/integrations/crewai."""


def test_every_public_name_the_readme_and_docs_show_imports_from_where_they_show_it():
    shown = _readme_imports()
    assert len(shown) > 15, shown
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for module, names in shown:
            if module in _old_paths():  # the README names them only as the old ones
                continue
            framework = OWN_ENVIRONMENT.get(module)
            if framework is not None and importlib.util.find_spec(framework) is None:
                continue
            assert not any(part.startswith("_") for part in module.split(".")), module
            imported = importlib.import_module(module)
            for name in names:
                assert hasattr(imported, name), f"{module} has no {name}"


def _old_paths() -> dict[str, tuple[str, str]]:
    from tooliscode._moved import MOVED

    return MOVED


@pytest.mark.parametrize("old", sorted(_old_paths()))
def test_an_old_import_path_warns_and_still_works(old):
    new, public = _old_paths()[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{re.escape(old)} is deprecated .* 0\.3\.0: "
                                                rf"import from {re.escape(public)}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    importlib.import_module(public)  # the place the warning sends people exists


def test_no_old_path_shadows_a_public_name_of_its_package():
    """Importing `a.b` sets attribute `b` of package `a` to the module: an old path ending in a
    name the package exports would replace that name."""
    import types

    for old in _old_paths():
        parent, _, leaf = old.rpartition(".")
        package = importlib.import_module(parent)
        assert leaf not in getattr(package, "__all__", ()), old
        assert isinstance(getattr(package, leaf, types.ModuleType("x")), types.ModuleType), old


def _public(package: str) -> set[str]:
    return set(getattr(importlib.import_module(package), "__all__", ()))


@pytest.mark.parametrize("folder", ["integrations", "examples"])
def test_integrations_and_examples_use_only_public_names(folder):
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.level or \
                    not (node.module or "").startswith("tooliscode"):
                continue
            module = node.module or ""
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            assert not any(p.startswith("_") for p in module.split(".")), where
            if module.startswith("tooliscode.integrations"):
                continue
            exported = _public(module)
            for alias in node.names:
                assert alias.name in exported or importlib.util.find_spec(
                    f"{module}.{alias.name}") is not None, f"{where}: {module}.{alias.name}"


def test_each_subpackage_exports_what_it_declares():
    for package in ("tools", "prompt", "engine", "codetool", "adapters", "durable", "openai",
                    "mcp", "serve", "runtime", "cli", "guest"):
        module = importlib.import_module(f"tooliscode.{package}")
        names = getattr(module, "__all__", None)
        assert names, package
        for name in names:
            if name == "RedisStore":
                pytest.importorskip("redis")
            assert getattr(module, name) is not None, f"tooliscode.{package}.{name}"


def test_no_two_public_classes_share_a_name():
    """One class per name across the public surface (a `Reply` is the code tool's)."""
    seen: dict[str, str] = {}
    for package in ("tooliscode", "tooliscode.tools", "tooliscode.prompt", "tooliscode.engine",
                    "tooliscode.codetool", "tooliscode.adapters", "tooliscode.durable",
                    "tooliscode.openai",
                    "tooliscode.openai.testing", "tooliscode.mcp", "tooliscode.serve",
                    "tooliscode.runtime"):
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            if name == "RedisStore":
                continue
            value = getattr(module, name)
            if isinstance(value, type):
                qualified = f"{value.__module__}.{value.__qualname__}"
                assert seen.setdefault(name, qualified) == qualified, (name, qualified, seen[name])


def test_callers_split_tools_between_the_code_and_the_model():
    from tooliscode.tools import split_callers

    assert split_callers(["a", "b", "c"], {"b": "direct", "c": "both"}, str) == (
        ["a", "c"], ["b", "c"])
    with pytest.raises(ValueError, match="not one of the tools"):
        split_callers(["a"], {"x": "code"}, str)
    with pytest.raises(ValueError, match="must be one of code, direct, both"):
        split_callers(["a"], {"a": "model"}, str)


NOT_MIRRORS = {"project", "security", "golden", "mcp_servers"}
"""The folders of tests/ that mirror no package path: the project as a whole (docs, examples,
layout, hygiene), hostile code against all of it, and helpers the tests share."""


def test_the_tests_mirror_the_package():
    """tests/engine/ holds the tests of tooliscode.engine (core/engine/), tests/runtime/data/
    those of tooliscode.runtime.data, tests/integrations/crewai/ those of
    tooliscode.integrations.crewai: every other folder names a subpackage or module that
    exists, and no test file sits at the top, where no module's tests belong."""
    tests = ROOT / "tests"
    assert not sorted(p.name for p in tests.glob("test_*.py"))
    mirrors = 0
    for folder in sorted(p for p in tests.rglob("*") if p.is_dir()):
        parts = folder.relative_to(tests).parts
        if parts[0] in NOT_MIRRORS or any(p.startswith((".", "__")) for p in parts):
            continue
        source = ROOT.joinpath(*parts) if parts[0] == "integrations" else \
            ROOT.joinpath("core", *parts)
        assert source.is_dir() or source.with_suffix(".py").is_file(), \
            f"tests/{'/'.join(parts)} mirrors nothing: there is no {source.relative_to(ROOT)}"
        mirrors += 1
    assert mirrors > 10, mirrors


def test_the_test_paths_the_makefile_names_exist():
    """`--ignore` and `--deselect` take a path that is not there without a word: a test file
    moved or renamed would then run where the Makefile keeps it out, or the reverse."""
    text = (ROOT / "Makefile").read_text()
    named = set(re.findall(r"\btests/[\w/.]*(?:::\w+)?", text))
    assert len(named) > 10, named
    for name in sorted(named):
        path, _, test = name.partition("::")
        assert (ROOT / path).exists(), f"the Makefile names {path}, which is not there"
        if test:
            assert re.search(rf"^(async )?def {test}\(", (ROOT / path).read_text(),
                             re.MULTILINE), f"the Makefile names {name}, which is not there"
