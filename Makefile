# Two entry points: `make demo` (the main job) and `make test` (the suite).
# Both create .venv on first use and install what they need into it.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

.PHONY: demo test bench install clean adult-extract

# what an install step installs, read from pyproject.toml: the names of the package's requirements
# and of those of the extras given (e.g. `$(call requirements,test)`), printed before pip runs
requirements = $(shell $(PYTHON) -c 'import re, tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	extra = p.get("optional-dependencies", {}); names = list(p["dependencies"]); \
	[names.extend(extra.get(e, [])) for e in "$(1)".split()]; \
	print(", ".join(dict.fromkeys(re.split(r"[<>=!~;\[ ]", n)[0] for n in names if not n.startswith("reidrisk"))))')

# pip (without --quiet) shows each package as it is collected, downloaded and installed (a
# progress bar on a terminal), after a line saying what this step installs
$(VENV)/.installed: pyproject.toml
	@echo "==> Creating the virtual environment $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> Upgrading pip in $(VENV)"
	$(PIP) install --quiet --upgrade pip
	@echo "==> Installing reidrisk (editable) and what it needs, with the test tools, the service and Dask:"
	@echo "    $(call requirements,test service dask)"
	$(PIP) install -e ".[test]"
	@echo "==> Installed into $(VENV)"
	touch $@

$(VENV)/.bench-installed: $(VENV)/.installed
	@echo "==> Installing the benchmarks' peers and tools: $(call requirements,bench)"
	$(PIP) install -e ".[test,bench]"
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/reidrisk demo

# the linter (ruff: src, tests, benchmarks), the type checker (mypy: src/reidrisk) and the import
# contracts (lint-imports: the layers and no circles, [tool.importlinter]), all configured in
# pyproject.toml, then the fast set (the default `pytest` run, slow tests deselected; in 2 worker
# processes, pyproject.toml; tests/test_imports.py refuses any import circle) and the slow set (in
# one process); each must pass. Exit code 5 (no test selected) is not a failure.
test: $(VENV)/.installed
	$(VENV)/bin/ruff check
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) -m pytest || [ $$? -eq 5 ]
	$(PY) -m pytest -m slow -n 0 || [ $$? -eq 5 ]

bench: $(VENV)/.bench-installed
	$(PY) benchmarks/frequency_speed.py

# anonymeter and anjana pin old NumPy/pandas (numpy==1.26.4, pandas==2.1.4): their own code runs on
# the current ones, so they are installed without their pins, their other requirements beside them
LINKAGE_PEERS_DEPS := "numba>=0.60" "polars>=1.0" "joblib>=1.3" "beartype>=0.17" "docutils>=0.20" \
                      "tabulate>=0.9" "typer>=0.12"
bench-linkage_peers: $(VENV)/.bench-installed
	@echo "==> Installing the linkage peers' requirements: $(subst ",,$(LINKAGE_PEERS_DEPS))"
	$(PIP) install $(LINKAGE_PEERS_DEPS)
	@echo "==> Installing the linkage peers without their pins: anonymeter anjana pycanon"
	$(PIP) install --no-deps anonymeter anjana pycanon
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

# rewrite the Adult extract shipped in the package from the full UCI Adult files of the shared
# data folder (deterministic: the same bytes every time; attribution in src/reidrisk/data/ADULT_EXTRACT.md)
adult-extract: $(VENV)/.installed
	$(PY) -c 'from reidrisk.data.adult import write_adult_extract as w; print(w("src/reidrisk/data/adult_extract.csv.gz"))'

clean:
	rm -rf $(VENV) reidrisk-report build *.egg-info src/*.egg-info
