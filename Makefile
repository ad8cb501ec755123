# kipviz: two commands set everything up on a fresh machine.
#   make lab   - virtualenv + packages + graphviz `dot` + Java check, then JupyterLab on notebooks/
#   make test  - the same set-up, then every test
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kipviz-installed
export PATH := $(abspath $(VENV))/bin:$(PATH)
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON ?= $(abspath $(PY))

.PHONY: setup lab lab-settings git-filter test bench lint fresh-check dot java tools browser voila clean sample-data audit notebooks lite

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kipviz needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,lite]'
	@touch $(STAMP)

setup: $(STAMP) dot java tools lab-settings

# tshark lets the capture tests check that Wireshark reads kipviz's pcaps (installed when root).
tools:
	@if ! command -v tshark >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's tshark (Wireshark's reader) for the capture tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark >/dev/null) || true; \
	fi

# graphviz: use a `dot` already on PATH; else Debian's graphviz package (as root);
# else the graphviz-pure wheel, linked as .venv/bin/dot.
dot: $(STAMP)
	@if command -v dot >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's graphviz package"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null) || true; \
	fi; \
	if ! command -v dot >/dev/null 2>&1; then \
	  echo "installing graphviz-pure (dot without apt)"; \
	  $(PY) -m pip install --quiet graphviz-pure && ln -sf graphviz-pure $(VENV)/bin/dot; \
	fi; \
	dot -V

java:
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then \
	  echo "kipviz's Spark analyses need Java 17 or newer (found: $${v:-none})."; \
	  echo "  Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless"; \
	  echo "  macOS:         brew install openjdk@17   (then set JAVA_HOME)"; \
	  echo "  or download a JDK 17+ and put its bin/ on PATH (or set JAVA_HOME)."; \
	  exit 1; \
	fi

# Chromium for the real-browser tests (tests/browser, driven by Playwright; no browser download):
# Debian's chromium package, installed when root; otherwise say how to get one.
CHROMIUM ?= /usr/bin/chromium
export KIPVIZ_CHROMIUM := $(CHROMIUM)
browser:
	@if [ -x "$(CHROMIUM)" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's chromium for the browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || true; \
	fi; \
	if [ ! -x "$(CHROMIUM)" ]; then \
	  echo "kipviz's browser tests (tests/browser) need Chromium at $(CHROMIUM)."; \
	  echo "  Debian/Ubuntu: sudo apt-get install -y chromium   (or: sudo make browser)"; \
	  echo "  elsewhere:     install Chromium, then: make test CHROMIUM=/path/to/chromium"; \
	  exit 1; \
	fi

# make lab PORT=8889 HOST=0.0.0.0: JupyterLab's port and address (given on the command line; default
# 8888, or the next free one, on localhost). LAB_FLAGS: any other `jupyter lab` flags, added to these.
# JupyterLab refuses to run as root unless told (containers, CI machines): --allow-root is added as root.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_PORT := $(if $(filter command line,$(origin PORT)),--port=$(PORT),)
LAB_HOST := $(if $(filter command line,$(origin HOST)),--ip=$(HOST),)
LAB_FLAGS ?=
# the kit's JupyterLab settings (tools/jupyterlab_overrides.json: no news pop-up over the notebooks), as
# defaults of the virtualenv's JupyterLab; Binder's postBuild and the browser tests use the same file
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json

# Saving a notebook in JupyterLab writes its outputs into the file: this git clean filter (named in
# .gitattributes) stores notebooks without them. Local config of this clone only; idempotent.
git-filter:
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  git config filter.kipviz-strip.clean "$(PYTHON) tools/strip_outputs.py" && \
	  git config filter.kipviz-strip.smudge cat && \
	  echo "git: notebooks are stored without outputs (filter kipviz-strip: tools/strip_outputs.py)"; \
	fi

lab-settings: $(STAMP)
	@mkdir -p $(dir $(LAB_OVERRIDES)) && cp tools/jupyterlab_overrides.json $(LAB_OVERRIDES)

lab: setup git-filter lab-settings
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $(LAB_ROOT) $(LAB_PORT) $(LAB_HOST) $(LAB_FLAGS)

# notebooks/*.ipynb and notebooks/voila/ rebuilt from their sources in notebooks/src/ (jupytext percent files)
notebooks: $(STAMP)
	$(PY) tools/build_notebooks.py

# the browser kit: site/, a JupyterLite site of the notebooks that run without Spark or a socket
# (kipviz/lite/; built from PyPI and npm, downloads cached in ~/.cache/kipviz-lite; then any static
# host serves it, e.g. `python -m http.server -d site`). Runs the Spark cells once here to save
# their output for the browser, hence setup (Java).
# (LITE_OUT=lite-site keeps a `kipviz export` site in site/)
LITE_OUT ?= site
lite: setup
	$(VENV)/bin/kipviz lite -o $(LITE_OUT)

# the dashboards (explorer, transaction animation) with their code hidden
voila: setup
	$(VENV)/bin/voila notebooks/voila

# loadgroup + tests/browser/xdist_group.py: the browser tests share one worker (one notebook at a time)
test: setup browser
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -n 2 --dist loadgroup -p tests.browser.xdist_group -q

# Known vulnerabilities in the installed packages (pip-audit; needs the network, so not part of
# `make test`). Unreachable service: one line and exit 2; vulnerabilities found: exit 1.
audit: $(STAMP)
	$(PY) tools/audit.py $(AUDIT_FLAGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check kipviz tests benchmarks tools notebooks/src

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/codec.py

# sample_data/: the bundled sample logs, regenerated byte for byte (sample_data/README.md)
sample-data: $(STAMP)
	$(VENV)/bin/kipviz sample-data --all -o sample_data

# Not part of `make test`: clone this repo into a temporary folder and run `make test` there.
# Kafka's reference schemas (../shared/kafka) are passed along so conformance tests run there too.
fresh-check:
	@d=$$(mktemp -d); echo "fresh clone in $$d"; \
	ref=$${KIPVIZ_KAFKA_REF:-$$(cd .. && pwd)/shared/kafka}; [ -d "$$ref" ] && export KIPVIZ_KAFKA_REF="$$ref"; \
	git clone --quiet . "$$d/kipviz" && env -u VIRTUAL_ENV -u PYSPARK_PYTHON $(MAKE) -C "$$d/kipviz" test; rc=$$?; rm -rf "$$d"; exit $$rc

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis test-artifacts tests/browser/artifacts
