# Two commands set everything up: `make test` and `make demo`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= 2

.PHONY: test demo lint bench wheel clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# mypy: the type hints the code standard asks for, checked ([tool.mypy] in pyproject.toml; about
# 40 s cold on 2 cores, a few seconds with its .mypy_cache)
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy src

test: $(STAMP) lint
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	  $(BIN)/python -m pytest -n $(JOBS) --dist loadgroup -rs -p no:cacheprovider tests

demo: $(STAMP)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(BIN)/boloop demo --out out/demo

bench: $(STAMP)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/gp_speed.py

# the wheel a user installs, in dist/; build/ first removed: setuptools copies whatever an earlier
# build left in build/lib into the wheel, modules deleted since included
wheel: $(STAMP)
	rm -rf build
	$(BIN)/python -m pip wheel --quiet --no-deps --no-build-isolation -w dist .

clean:
	rm -rf $(VENV) out build dist src/*.egg-info
