# Development shortcuts. The tools come from the active virtual environment, or from
# ./.venv when none is active (`make check BIN=` uses whatever is on PATH).
BIN ?= $(if $(VIRTUAL_ENV),,$(if $(wildcard .venv/bin/python),.venv/bin/,))

.PHONY: check fix lint types test

## check: everything CI checks, without the fresh install (lint, format, types, tests)
check: lint types test

lint:
	$(BIN)ruff check .
	$(BIN)ruff format --check .

types:
	$(BIN)mypy

test:
	$(BIN)pytest

## fix: apply ruff's safe fixes and format the code
fix:
	$(BIN)ruff check --fix .
	$(BIN)ruff format .
