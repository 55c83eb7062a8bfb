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

# the linter (ruff: src, tests, benchmarks) and the type checker (mypy: src/reidrisk), both
# configured in pyproject.toml, then the fast set (the default `pytest` run, slow tests
# deselected; in 2 worker processes, pyproject.toml) and the slow set (in one process); each must
# pass. Exit code 5 (no test selected) is not a failure.
test: $(VENV)/.installed
	$(VENV)/bin/ruff check
	$(VENV)/bin/mypy
	$(PY) -m pytest || [ $$? -eq 5 ]
	$(PY) -m pytest -m slow -n 0 || [ $$? -eq 5 ]

bench: $(VENV)/.bench-installed
	$(PY) benchmarks/frequency_speed.py

# anonymeter and anjana pin old NumPy/pandas (numpy==1.26.4, pandas==2.1.4): their own code runs on
# the current ones, so they are installed without their pins, their other requirements beside them
LINKAGE_PEERS_DEPS := "numba>=0.60" "polars>=1.0" "joblib>=1.3" "beartype>=0.17" "docutils>=0.20" \
                      "tabulate>=0.9" "typer>=0.12"
bench-linkage_peers: $(VENV)/.bench-installed
	$(PIP) install --quiet $(LINKAGE_PEERS_DEPS)
	$(PIP) install --quiet --no-deps anonymeter anjana pycanon
	$(PY) benchmarks/linkage_peers.py $(ARGS)

# pycanon declares typing_extensions==4.9.0 and its report and CLI needs (reportlab, pyreadstat,
# typer, ...); its anonymity module, all the assess benchmarks call, needs only NumPy and pandas,
# so it is installed without its pins (no package is downgraded)
bench-assess_check bench-assess_speed: $(VENV)/.bench-installed
	$(PIP) install --quiet --no-deps pycanon
	$(PY) benchmarks/$(@:bench-%=%).py $(ARGS)

# any benchmark by name, with its peers installed: `make bench-collect_speed`, `make bench-em_stop ARGS=--quick`
bench-%: $(VENV)/.bench-installed
	$(PY) benchmarks/$*.py $(ARGS)

clean:
	rm -rf $(VENV) reidrisk-report build *.egg-info src/*.egg-info
