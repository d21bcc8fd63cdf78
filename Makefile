# Two commands for a fresh clone: `make demo` and `make test`. Each creates .venv and
# installs what it needs (the project with every framework extra and the test tools).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# CrewAI pins mcp<2 and openai<3, which the mcp, openai-agents and pydantic-ai extras cannot
# share: it gets an environment of its own, where tests/integrations/crewai runs.
CREW       := .venv-crewai
CREW_PY    := $(CREW)/bin/python
CREW_STAMP := $(CREW)/.installed

.PHONY: setup warm demo test bench lint docs typed clean

# The two environments install side by side: most of an install is waiting on downloads and
# unpacking, which two jobs overlap. The data runtime's first compile (a minute and a half of
# CPU on a new machine, once) runs beside CrewAI's install too, rather than inside the first
# test that needs it; once it is in the cache, `warm` takes under a second.
setup:
	@$(MAKE) --no-print-directory -j2 $(STAMP) $(CREW_STAMP) warm

warm: $(STAMP)
	$(PY) -m tooliscode.cli warmup --runtime all

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[all,data,dev]"
	touch $(STAMP)

$(CREW_STAMP): pyproject.toml
	$(PYTHON) -m venv $(CREW)
	$(CREW_PY) -m pip install --quiet --upgrade pip
	$(CREW_PY) -m pip install --quiet -e ".[crewai,data,testing,build]"
	touch $(CREW_STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

# Two workers, each test file on one of them (module fixtures are then set up once). Most of
# the suite's time is spent starting interpreters and subprocesses, which two workers overlap.
# Then the whole suite again with the data runtime as the default (tests/runtime/data pins it
# already; HOST_ONLY boots no guest; the examples are the README's, on the default runtime, and
# what they show is tested on both runtimes by the other files; the first uses into a fresh
# cache and the command runtime's own tests pin their runtimes, whichever the suite's is, so
# once is enough; the docs show the default runtime's output).
# tests/ mirrors the package: tests/engine/ holds tooliscode.engine's tests, and so on.
HOST_ONLY := tests/engine/test_daemon_threads.py tests/guest/test_cell_tail.py \
	tests/guest/test_convert.py tests/guest/test_plain_calls.py tests/guest/test_rehearsal.py \
	tests/guest/test_reach.py tests/runtime/test_epoch_ticker.py \
	tests/guest/test_turns.py \
	tests/guest/test_validate.py \
	tests/openai/test_parse_call.py tests/prompt/test_render_result.py \
	tests/project/test_layout.py tests/tools/test_schema_stubs.py tests/tools/test_summaries.py
ONCE := tests/runtime/data $(HOST_ONLY) tests/project/test_examples.py \
	tests/project/test_docs.py tests/runtime/test_command_runtime.py tests/runtime/test_tiers.py
PINNED := tests/runtime/test_runtime.py::test_a_fresh_cache_builds_and_compiles_once_and_says_so \
	tests/runtime/test_runtime.py::test_without_componentize_py_a_missing_component_is_a_clear_error
test: setup
	$(PY) -m pytest -q -n 2 --dist loadfile
	$(CREW_PY) -m pytest -q tests/integrations/crewai
	TOOLISCODE_RUNTIME=data $(PY) -m pytest -q -n 2 --dist loadfile tests \
		$(addprefix --ignore=,$(ONCE)) $(addprefix --deselect ,$(PINNED))
	TOOLISCODE_RUNTIME=data $(CREW_PY) -m pytest -q tests/integrations/crewai

bench: setup
	$(PY) benchmarks/run_all.py

# mypy reads the package as it is installed (core/ is `tooliscode`, integrations/ is
# `tooliscode.integrations`), which an editable install hides behind an import hook: a tree of
# links shows it that layout. What it checks is in pyproject.toml ([tool.mypy]).
# The API reference (`make docs`) reads the same tree.
TYPED := build/typed
typed:
	rm -rf $(TYPED) && mkdir -p $(TYPED)/tooliscode
	for p in core/*; do ln -s ../../../$$p $(TYPED)/tooliscode/; done
	ln -s ../../../integrations $(TYPED)/tooliscode/integrations

lint: setup typed
	$(PY) -m ruff check core integrations tests examples benchmarks
	$(VENV)/bin/lint-imports
	cd $(TYPED) && ../../$(VENV)/bin/mypy --config-file ../../pyproject.toml

# The documentation site (mkdocs.yml), into build/site. Strict: a broken link, anchor, include
# or API reference fails the build. `$(VENV)/bin/mkdocs serve` previews it.
docs: $(STAMP) typed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) $(CREW) build *.egg-info
