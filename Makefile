# Two entry points (see README): `make demo` runs the main job, `make test` runs every test.
# Both create .venv and install what they need; they work from a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed
DEMO_STAMP = $(VENV)/.demo-installed

.PHONY: demo test lint lit pytest wheel-check docs clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch: reuse one that is already there (GPU machines); else the CPU build 2.13.0.
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[test,ptx]"
	touch $(STAMP)

# The demo needs only the package on a CPU machine (the interpreter); with a GPU it also needs
# cuda-python and the triton wheel's ptxas (the `gpu` extra). The tests need the rest.
$(DEMO_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	if command -v nvidia-smi >/dev/null 2>&1; then $(PY) -m pip install -q -e ".[gpu]"; else $(PY) -m pip install -q -e .; fi
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(PY) -m sparsecc.demo $(DEMO_ARGS)

lit: $(STAMP)
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/lit -v test/lit

# pytest runs on every core (pytest-xdist), at most PYTEST_WORKERS_MAX processes (each imports torch).
PYTEST_WORKERS_MAX ?= 4
PYTEST = $(PY) -m pytest -q -n auto --maxprocesses=$(PYTEST_WORKERS_MAX) test/python

pytest: $(STAMP)
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PYTEST)

lint: $(STAMP)
	$(VENV)/bin/ruff check sparsecc test bench docs

# pytest runs the lit suite too (test/python/tools/test_lit.py), so one command covers everything.
test: $(STAMP)
	$(MAKE) lint
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PYTEST)

# The packaged form: build the wheel, install it into a fresh virtualenv (torch from the host's
# site-packages or the CPU build) and run the demo from outside the source tree.
wheel-check: $(STAMP)
	rm -rf dist .wheel-venv
	$(PY) -m pip wheel -q --no-deps -w dist .
	$(PYTHON) -m venv --system-site-packages .wheel-venv
	.wheel-venv/bin/python -c "import torch" 2>/dev/null || .wheel-venv/bin/python -m pip install -q torch==2.13.0
	.wheel-venv/bin/python -m pip install -q dist/sparsecc-*.whl
	cd /tmp && $(abspath .wheel-venv)/bin/python -c "import sparsecc, sys; assert 'site-packages' in sparsecc.__file__, sparsecc.__file__; print('sparsecc', sparsecc.__version__, 'from', sparsecc.__file__)"
	cd /tmp && $(abspath .wheel-venv)/bin/python -m sparsecc.demo

# The user guide, warnings as errors (test/python/test_docs.py builds it in `make test` too).
docs: $(STAMP)
	$(PY) -m sphinx -W -q -b html docs docs/_build/html
	@echo "docs/_build/html/index.html"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache dist .wheel-venv
