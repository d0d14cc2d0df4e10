# matview: `make demo` runs the quickstart, `make test` the whole suite (`make test-cluster`
# its cluster runs alone, `make test-fast` the tests needing no Spark), `make bench` the quick
# benchmark suite; all install first.
PYTHON ?= python3
VENV := .venv
DBT_VENV := .venv-dbt
PY := $(VENV)/bin/python
CLUSTER ?= local-cluster[2,1,1024]

.PHONY: install demo test test-fast test-cluster lint bench clean

install: $(VENV)/.installed

# dbt in a virtualenv of its own (its protobuf pin would downgrade Spark Connect's), for the
# dbt test of tests/server/test_dbt.py
$(DBT_VENV)/.installed:
	$(PYTHON) -m venv $(DBT_VENV)
	$(DBT_VENV)/bin/pip install -q "dbt-core>=1.10,<1.11" "dbt-postgres>=1.9,<1.10"
	touch $@

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,bench]"
	touch $@

demo: install
	$(PY) examples/quickstart.py

test: install $(DBT_VENV)/.installed
	$(PY) -m pytest --durations=10
	$(MAKE) --no-print-directory test-cluster

# the tests that start no Spark (no `spark` marker, which tests/conftest.py adds): under 2 minutes
test-fast: install
	$(PY) -m pytest -m "not spark and not cluster"

# the oracle tests of tests/cluster/test_cluster.py on a cluster of two executor JVMs, classic and
# through Spark Connect, in a process of its own (one SparkContext per process)
test-cluster: install
	$(PY) -m pytest -m cluster --spark-master '$(CLUSTER)' --spark-api both

bench: install
	$(PY) -m bench quick

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
