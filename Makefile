# Two commands for a fresh clone: `make demo` and `make test`. Each creates .venv and
# installs what it needs (the project with every framework extra and the test tools).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[all,data,dev]"
	touch $(STAMP)

demo: setup
	$(PY) examples/demo.py

# Two workers, each test file on one of them (module fixtures are then set up once). Most of
# the suite's time is spent starting interpreters and subprocesses, which two workers overlap.
# Then the whole suite again with the data runtime as the default (tests/data pins it already;
# tests/unit boots no guest).
test: setup
	$(PY) -m pytest -q -n 2 --dist loadfile
	TOOLISCODE_RUNTIME=data $(PY) -m pytest -q -n 2 --dist loadfile tests \
		--ignore=tests/data --ignore=tests/unit

bench: setup
	$(PY) benchmarks/run_all.py

lint: setup
	$(PY) -m ruff check core integrations tests examples benchmarks
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) build *.egg-info
