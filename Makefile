# matview: `make demo` runs the quickstart, `make test` the whole suite, `make bench` the quick
# benchmark suite; all install first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: install demo test lint bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,bench]"
	touch $@

demo: install
	$(PY) examples/quickstart.py

test: install
	$(PY) -m pytest

bench: install
	$(PY) -m bench quick

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
