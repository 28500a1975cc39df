# pangeo-hpc: the two set-up commands (`make demo`, `make test`) and a few helpers.
# Needs only Python >= 3.11 and the package registries; everything goes into .venv.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA ?= data/era5-demo
PYTEST_ARGS ?=
LOCK := requirements/lock.txt

.PHONY: demo lab test test-lowest lint lock bench docs system clean strip-notebooks

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "pangeo-hpc needs Python >= 3.11: make PYTHON=python3.11 ...")'
	$(PYTHON) -m venv $(VENV)

# the versions of requirements/lock.txt (installed by uv: no resolver backtracking, ~30 s),
# compiled to bytecode once here (~30 s more): otherwise a shell with PYTHONDONTWRITEBYTECODE
# set (as on this project's machines) compiles some 1500 modules again in every process (the
# CLI, each worker), ~2.5 s each time on a quiet 2-core machine
$(VENV)/.installed: pyproject.toml $(LOCK) | $(BIN)/python
	bash ci/uv.sh $(VENV) pip install --quiet --compile-bytecode --python $(BIN)/python \
		-c $(LOCK) -e '.[test,all]'
	$(BIN)/python -m compileall -q pangeo_hpc
	@touch $@

## lock: renew requirements/lock.txt from pyproject.toml: the newest versions it allows, with
## every extra, for every platform and Python >= 3.11 (tests/test_lock.py checks the two agree)
lock: | $(BIN)/python
	bash ci/uv.sh $(VENV) pip compile --quiet --universal --python-version 3.11 --upgrade \
		--extra test --extra all --extra docs --custom-compile-command 'make lock' -o $(LOCK) pyproject.toml

## demo: set up, write 20 years of 1-degree demo data (SST, 2 m temperature, 10 m winds:
## daily; precipitation: hourly, 2019; a CMIP-like model's tas: monthly, 2.5 degrees,
## noleap), run every shipped recipe on a local cluster
DEMO_DAILY := sea_surface_temperature,air_temperature_at_2_metres,eastward_wind_at_10_metres,northward_wind_at_10_metres
RECIPES := era5-sst-mean era5-sst-trend era5-nino34 era5-nino34-djf era5-sst-hovmoeller \
	era5-t2m-warming era5-wind-speed era5-precip-p95
demo: $(VENV)/.installed
	$(BIN)/python -m pangeo_hpc.run demo-data --out $(DATA) --variables $(DEMO_DAILY) --model
	$(BIN)/python -m pangeo_hpc.run demo-data --out $(DATA) \
		--variables precipitation_amount_1hour_Accumulation --start 2019-01 --end 2019-12
	for r in $(RECIPES); do $(BIN)/python -m pangeo_hpc.run $$r --data $(DATA) || exit 1; done
	$(BIN)/python -m pangeo_hpc.run era5-t2m-normals --data $(DATA) --start 2000-01 --end 2019-12
	$(BIN)/python -m pangeo_hpc.run model-vs-era5-t2m --data $(DATA)

## lab: JupyterLab on 127.0.0.1 with the notebooks, the demo data and the Dask dashboard inside
LAB_ARGS ?=
lab: $(VENV)/.installed
	$(BIN)/python -m pangeo_hpc.run demo-data --out $(DATA)
	$(BIN)/python -m pangeo_hpc.run lab --here --data $(DATA) --notebook-dir notebooks $(LAB_ARGS)

## strip-notebooks: remove outputs before committing (a test checks they are stripped)
strip-notebooks: $(VENV)/.installed
	$(BIN)/jupyter nbconvert --clear-output --inplace notebooks/*.ipynb

## test: set up (Python packages; as root also cdo, Slurm and Grid Engine), lint, run all tests
## in PYTEST_WORKERS pytest-xdist workers (default 2; 0: in this process): a module's tests in
## one, the modules of Slurm, Grid Engine, the big bucket or the browser in one each
## (tests/support/suite_groups.py)
PYTEST_WORKERS ?= 2
test: $(VENV)/.installed system lint
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadscope $(PYTEST_ARGS)

## test-lowest: the lowest versions pyproject.toml allows (uv --resolution lowest-direct) in
## .venv-lowest, then the smoke tests (pytest -m smoke); CI runs it after `make test`
LOWEST_PYTEST_ARGS ?=
test-lowest:
	PYTHON=$(PYTHON) bash ci/lowest-versions.sh $(LOWEST_PYTEST_ARGS)

lint: $(VENV)/.installed
	$(BIN)/ruff check pangeo_hpc tests benchmarks
	$(BIN)/ruff format --check pangeo_hpc tests benchmarks
	$(BIN)/lint-imports

system:
	bash ci/install-system.sh

## bench: the benchmark suite B1-B5, B4-lz4hc, warm-up, B7-B9 (not a test): results in
## benchmarks/results/*.json, shown by the docs' benchmarks page; from a clean tree unless
## --dirty; e.g. make bench BENCH_ARGS="--cases B1,B2 --quick"
BENCH_ARGS ?=
bench: $(VENV)/.installed
	$(BIN)/python benchmarks/suite.py $(BENCH_ARGS)

## docs: the site in docs/_build/html (Sphinx, warnings as errors, internal links checked;
## external links are not: no internet), the notebooks executed on a small demo tree
## (DOCS_EXECUTE=off: not run); the docs extra comes from the lock
DOCS_DATA ?= docs/_build/demo-data
DOCS_EXECUTE ?= force
DOCS_STATE := $(abspath docs/_build/state)
DOCS_VARIABLES := sea_surface_temperature,air_temperature_at_2_metres
$(VENV)/.docs-installed: pyproject.toml $(LOCK) $(VENV)/.installed
	bash ci/uv.sh $(VENV) pip install --quiet --compile-bytecode --python $(BIN)/python \
		-c $(LOCK) -e '.[test,all,docs]'
	@touch $@
docs: $(VENV)/.docs-installed
	$(BIN)/python -m pangeo_hpc.run demo-data --out $(DOCS_DATA) --resolution 2.0 \
		--start 2000-01 --end 2009-12 --variables $(DOCS_VARIABLES)
	# the model's files once: demo-data --model refuses its own files on a second run
	# (demo.writer.has_history compares the file's history with itself, since f448bca)
	test -d $(DOCS_DATA)/cmip || $(BIN)/python -m pangeo_hpc.run demo-data --out $(DOCS_DATA) \
		--resolution 2.0 --start 2000-01 --end 2009-12 --variables $(DOCS_VARIABLES) --model
	mkdir -p $(DOCS_STATE)
	PANGEO_HPC_DOCS_EXECUTE=$(DOCS_EXECUTE) \
	DASK_PANGEO_HPC__DATA__ROOT=$(abspath $(DOCS_DATA)) \
	DASK_PANGEO_HPC__CACHE__FOLDER=$(DOCS_STATE)/states \
	DASK_PANGEO_HPC__CATALOG__CACHE=$(DOCS_STATE)/catalog \
	DASK_PANGEO_HPC__PLAN__CALIBRATION=$(DOCS_STATE)/calibration.json \
	DASK_PANGEO_HPC__OUTPUT__ROOT=$(DOCS_STATE)/results \
		$(BIN)/sphinx-build -W --keep-going -b html -j 1 docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

clean:
	rm -rf $(VENV) .venv-lowest results docs/_build docs/_generated docs/api docs/gallery/*.ipynb
