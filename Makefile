# The two commands of the README: `make serve` and `make test`. Both create .venv and install
# what is needed first (again only when pyproject.toml changes).
# `python -P`: the repository's top-level operator/ folder must not shadow the standard library's
# operator module, which `python -m` from this folder would otherwise import.
PYTHON ?= python3.11
VENV := .venv
INSTALLED := $(VENV)/.installed

.PHONY: serve test install bench clean

$(INSTALLED): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is needed (set PYTHON=...)"; exit 1; }
	test -x $(VENV)/bin/python || $(PYTHON) -P -m venv $(VENV)
	$(VENV)/bin/python -P -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -P -m pip install --quiet -e '.[dev]'
	touch $@

install: $(INSTALLED)

serve: $(INSTALLED)
	$(VENV)/bin/callscope serve

test: $(INSTALLED)
	$(VENV)/bin/python -P -m pytest $(PYTEST_ARGS)

bench: $(INSTALLED)
	$(VENV)/bin/python benchmarks/api_load.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
