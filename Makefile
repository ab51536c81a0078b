# The two commands of the README: `make serve` and `make test`. Both create .venv and install
# what is needed first (again only when pyproject.toml changes).
PYTHON ?= python3.11
VENV := .venv
INSTALLED := $(VENV)/.installed

.PHONY: serve test install bench clean

$(INSTALLED): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is needed (set PYTHON=...)"; exit 1; }
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(INSTALLED)

serve: $(INSTALLED)
	$(VENV)/bin/callscope serve

test: $(INSTALLED)
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

bench: $(INSTALLED)
	$(VENV)/bin/python benchmarks/api_load.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
