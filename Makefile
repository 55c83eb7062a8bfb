# Two entry points: `make demo` (the main job) and `make test` (the suite).
# Both create .venv on first use and install what they need into it.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

.PHONY: demo test bench install clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[test]"
	touch $@

$(VENV)/.bench-installed: $(VENV)/.installed
	$(PIP) install --quiet -e ".[test,bench]"
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/reidrisk demo

# the fast set (the default `pytest` run, slow tests deselected), then the slow set; both must
# pass. Exit code 5 (no test selected) is not a failure.
test: $(VENV)/.installed
	$(PY) -m pytest || [ $$? -eq 5 ]
	$(PY) -m pytest -m slow || [ $$? -eq 5 ]

bench: $(VENV)/.bench-installed
	$(PY) benchmarks/frequency_speed.py

# any benchmark by name, with its peers installed: `make bench-collect_speed`, `make bench-em_stop ARGS=--quick`
bench-%: $(VENV)/.bench-installed
	$(PY) benchmarks/$*.py $(ARGS)

clean:
	rm -rf $(VENV) reidrisk-report build *.egg-info src/*.egg-info
